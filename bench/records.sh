# The awk functions that read bench records (one JSON object a line, as `build/bench --out FILE`
# writes them) and summarise rounds; bench/work_table.sh and bench/pair_table.sh put
# "$RECORDS_AWK" before their programs. num(k) and str(k): field k of the current line, as a
# number or a string ("" when absent). median, lo and hi of a space-separated list.
# shellcheck disable=SC2034
RECORDS_AWK='
function num(k) { if (!match($0, "\"" k "\":[^,}]*")) return ""; return substr($0, RSTART + length(k) + 3, RLENGTH - length(k) - 3) + 0 }
function str(k) { if (!match($0, "\"" k "\":\"[^\"]*\"")) return ""; return substr($0, RSTART + length(k) + 4, RLENGTH - length(k) - 5) }
function median(list,    v, n, i, j, t) {
    n = split(list, v, " ")
    for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
function lo(list,    v, n, i, m) { n = split(list, v, " "); m = v[1]; for (i = 2; i <= n; i++) if (v[i] + 0 < m + 0) m = v[i]; return m }
function hi(list,    v, n, i, m) { n = split(list, v, " "); m = v[1]; for (i = 2; i <= n; i++) if (v[i] + 0 > m + 0) m = v[i]; return m }
'
