# What the results scripts' awk halves share (results/results_prose.awk, results/results2.awk):
# reading the committed records and summaries, and formatting the pages' text. Blocks are named
# by TAG, the script that prints them ("results_prose.sh"), set with awk -v.

# --- reading -------------------------------------------------------------------------------------

# A number field of a one-line JSON record ("" if absent).
function jget(s, key,    k) {
    k = "\"" key "\":"
    if (!match(s, k "[^,}]*")) return ""
    return substr(s, RSTART + length(k), RLENGTH - length(k))
}

# A csv with a quoted first field (the point name, which holds commas) into T[row, column name];
# returns the row count. T[i, "point"] is the point name.
function read_csv(file, T,    line, n, i, nf, f, hdr, pt) {
    n = 0
    while ((getline line < file) > 0) {
        pt = ""
        if (line ~ /^"/) { match(line, /^"[^"]*"/); pt = substr(line, 2, RLENGTH - 2); line = substr(line, RLENGTH + 1) }
        nf = split(line, f, ",")
        if (!n && !hdr) { for (i = 1; i <= nf; i++) H[i] = f[i]; hdr = nf; continue }
        n++
        T[n, "point"] = pt
        for (i = 2; i <= nf; i++) T[n, H[i]] = f[i]
    }
    close(file)
    return n
}

# A config.conf key ("key = value  # comment").
function conf(file, key,    line, v) {
    v = ""
    while ((getline line < file) > 0)
        if (line ~ "^" key " *=") { sub(/^[^=]*= */, "", line); sub(/ *#.*$/, "", line); v = line }
    close(file)
    return v
}

# --- formatting ----------------------------------------------------------------------------------

function f2(x) { return sprintf("%.2f", x) }
function f3(x) { return sprintf("%.3f", x) }
function f4(x) { return sprintf("%.4f", x) }
function pc(x) { return sprintf("%.0f%%", 100 * x) }
function fx(x) { return sprintf("%.1fx", x) }
# "a-b" of two formatted numbers, or one if they print alike.
function rng(a, b, fmt,    x, y) {
    x = sprintf(fmt, a < b ? a : b); y = sprintf(fmt, a < b ? b : a)
    return x == y ? x : x "-" y
}
function word(n) {
    split("zero one two three four five six seven eight nine ten eleven twelve", W, " ")
    return n >= 0 && n <= 12 ? W[n + 1] : n
}
function Word(n,    w) { w = word(n); return toupper(substr(w, 1, 1)) substr(w, 2) }

# Greedy wrap at 100 columns, the pages' width; first and continuation prefixes.
function wrap(text, first, cont,    n, w, i, line, out) {
    n = split(text, w, " ")
    line = first
    out = ""
    for (i = 1; i <= n; i++) {
        if (w[i] == "") continue
        if (line != first && line != cont && length(line) + 1 + length(w[i]) > 100) { out = out line "\n"; line = cont }
        line = (line == first || line == cont) ? line w[i] : line " " w[i]
    }
    return out line "\n"
}
function para(text) { OUT = OUT wrap(text, "", "") "\n" }
function item(text) { OUT = OUT wrap(text, "- ", "  ") }
function raw(text) { OUT = OUT text "\n" }
function block(name) { OUT = OUT "<!-- " TAG " " name " -->\n" }
function endblock(name) { sub(/\n\n$/, "\n", OUT); OUT = OUT "<!-- /" TAG " " name " -->\n" }
