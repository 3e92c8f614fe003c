"""SB-RESULT lines from the guest's Python checks (to stdout and OUT/results)."""


def result(out, status, name, detail):
    line = "SB-RESULT %s %s - %s" % (status, name, detail)
    print(line)
    with open(out + "/results", "a") as f:
        f.write(line + "\n")
