#!/usr/bin/python3
"""Writes the man page tickwire(1) and the bash completion file of the
`tickwire` program from its own --help texts (run at build time).

usage: tw_cli_docs.py BIN COMMANDS_FILE VERSION MAN_OUT COMPLETION_OUT

COMMANDS_FILE has one "name|one-line help" per line, as registered with
tw_cli() (tools/CMakeLists.txt writes it); every command's text is what
`BIN name --help` prints.  A command whose --help fails to run (or prints
nothing) stops the build: the page would otherwise silently miss it.
"""

import datetime
import os
import re
import subprocess
import sys

OPT_RE = re.compile(r"(?<![\w/.=-])(--?[A-Za-z][A-Za-z0-9-]*)")


def help_text(binary, words):
    env = dict(os.environ, COLUMNS="80", TERM="dumb")
    r = subprocess.run([binary, *words, "--help"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                       timeout=30, env=env)
    text = r.stdout.decode("utf-8", "replace").rstrip()
    if not text:
        sys.exit("tw_cli_docs: `%s %s --help` printed nothing (exit %d)"
                 % (binary, " ".join(words), r.returncode))
    return text


def options(text):
    """The options a help text names: every option-like word on its usage
    lines and on lines that start with an option (the option list), not
    those quoted in its prose ("python3 -c ...")."""
    seen = []
    lines = [ln for ln in text.splitlines()
             if ln.lstrip().startswith(("usage:", "[", "-", "|"))]
    for m in OPT_RE.finditer("\n".join(lines)):
        o = m.group(1).rstrip("-")
        if len(o) > 1 and o not in seen:
            seen.append(o)
    return seen


def roff(text):
    out = []
    for line in text.splitlines():
        line = line.replace("\\", "\\e")
        if line.startswith((".", "'")):
            line = "\\&" + line
        out.append(line)
    return "\n".join(out)


def man_page(version, top, cmds):
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    day = (datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc).date()
           if epoch else datetime.date.today())
    date = day.isoformat()
    lines = [
        '.TH TICKWIRE 1 "%s" "tickwire %s" "User Commands"' % (date, version),
        ".SH NAME",
        "tickwire \\- low-latency trading toolkit: backtest sweeps, engine, "
        "userspace TCP/IP, FIX venue and live trader",
        ".SH SYNOPSIS",
        ".B tickwire",
        ".I command",
        "[\\fIoptions\\fR]",
        ".br",
        ".B tickwire",
        ".I command",
        ".B \\-\\-help",
        ".SH DESCRIPTION",
        "One program with subcommands.  Every subcommand prints its usage with",
        ".BR \\-\\-help ;",
        "it exits 0 on success and non-zero with one line on stderr on failure.",
        ".PP",
        ".nf",
        roff(top),
        ".fi",
        ".SH COMMANDS",
    ]
    for name, short, text in cmds:
        lines += [".SS \"tickwire %s\"" % name, roff(short) + ".", ".PP", ".nf", roff(text), ".fi"]
    lines += [
        ".SH ENVIRONMENT",
        ".TP",
        ".B TICKWIRE_MODULE_DIR",
        "Directory searched first for the port backend modules",
        "(libtickwire-port-dpdk.so, libtickwire-port-xdp.so); by default they are",
        "found beside libtickwire.",
        ".SH SEE ALSO",
        "The documents under /usr/share/doc/tickwire and the Python package",
        ".BR tickwire",
        "(/usr/bin/python3 \\-c 'import tickwire; help(tickwire)').",
        "",
    ]
    return "\n".join(lines)


def completion(cmds):
    firsts, subs, opts = [], {}, {}
    for name, _, text in cmds:
        words = name.split()
        if words[0] not in firsts:
            firsts.append(words[0])
        if len(words) == 2:
            subs.setdefault(words[0], []).append(words[1])
        opts[name] = options(text) + (["--help"] if "--help" not in options(text) else [])
    out = ["# bash completion for tickwire (generated from its --help texts)",
           "_tickwire()",
           "{",
           "    local cur=${COMP_WORDS[COMP_CWORD]} key=''",
           "    COMPREPLY=()",
           "    if [ \"$COMP_CWORD\" -eq 1 ]; then",
           "        COMPREPLY=( $(compgen -W '%s --help --version' -- \"$cur\") )"
           % " ".join(firsts),
           "        return 0",
           "    fi",
           "    case \"${COMP_WORDS[1]}\" in"]
    for g, s in subs.items():
        own = opts.get(g, [])
        out += ["    %s)" % g,
                "        if [ \"$COMP_CWORD\" -eq 2 ]; then",
                "            COMPREPLY=( $(compgen -W '%s' -- \"$cur\") )"
                % " ".join(s + own),
                "            return 0",
                "        fi",
                "        key=\"%s ${COMP_WORDS[2]}\" ;;" % g]
    out += ["    *) key=\"${COMP_WORDS[1]}\" ;;",
            "    esac",
            "    local words=''",
            "    case \"$key\" in"]
    for name, o in opts.items():
        out.append("    '%s') words='%s' ;;" % (name, " ".join(o)))
    out += ["    esac",
            "    if [[ \"$cur\" == -* ]]; then",
            "        COMPREPLY=( $(compgen -W \"$words\" -- \"$cur\") )",
            "    else",
            "        COMPREPLY=( $(compgen -f -- \"$cur\") )",
            "    fi",
            "    return 0",
            "}",
            "complete -o filenames -F _tickwire tickwire",
            ""]
    return "\n".join(out)


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    binary, cmds_file, version, man_out, comp_out = sys.argv[1:]
    cmds = []
    with open(cmds_file) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            name, _, short = line.partition("|")
            cmds.append((name, short, help_text(binary, name.split())))
    top = help_text(binary, [])
    with open(man_out, "w") as f:
        f.write(man_page(version, top, cmds))
    with open(comp_out, "w") as f:
        f.write(completion(cmds))


if __name__ == "__main__":
    main()
