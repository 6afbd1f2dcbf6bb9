# The fake nvidia-smi's CSV answers: -v kind=gpu|apps fields=a,b header=0|1 units=0|1 ids=0,GPU-..
# First file: fields.tsv (kind, name asked, column, unit); second: the recorded table (first row: columns).
BEGIN { FS = "\t"; bad = 0 }
FNR == NR {
    if ($1 == kind) { column[$2] = $3; unit[$2] = $4 }
    next
}
FNR == 1 {
    for (i = 1; i <= NF; i++) col[$i] = i
    n = split(fields, want, ",")
    for (j = 1; j <= n; j++) {
        f = want[j]
        gsub(/^ +| +$/, "", f)
        want[j] = f
        if (f == "" || !(f in column)) {
            printf "Field \"%s\" is not a valid field to query.\n", f
            bad = 1
            exit 2
        }
        c[j] = col[column[f]]
    }
    nsel = (ids == "") ? 0 : split(ids, sel, ",")
    if (header) {
        line = ""
        for (j = 1; j <= n; j++) {
            h = column[want[j]]
            if (unit[want[j]] != "") h = h " [" unit[want[j]] "]"
            line = line (j > 1 ? ", " : "") h
        }
        print line
    }
    next
}
{
    if (nsel > 0) {
        keep = 0
        for (s = 1; s <= nsel; s++)
            if (("index" in col && $col["index"] == sel[s]) || ("uuid" in col && $col["uuid"] == sel[s])) keep = 1
        if (!keep) next
    }
    line = ""
    for (j = 1; j <= n; j++) {
        v = $c[j]
        if (units && unit[want[j]] != "" && v !~ /^\[/) v = v " " unit[want[j]]
        line = line (j > 1 ? ", " : "") v
    }
    print line
}
END { if (bad) exit 2 }
