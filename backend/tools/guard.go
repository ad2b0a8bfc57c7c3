package tools

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// Danger is what a terminal command could destroy.
type Danger struct {
	// Key names the rule, in the familiar agent's words ("recursive
	// delete", "git force push (rewrites remote history)"): the key its
	// command_allowlist keeps a person's "always" under, so a list brought
	// from there is honoured as it is.
	Key string
	// Hardline: nobody can undo it (a wipe of / or of a disk, a shutdown),
	// so it never runs, whatever anyone answers or config.yaml says.
	Hardline bool
	// Script is the script the dangerous line is in, when it is in one
	// the command runs ("" when it is in the command itself).
	Script string
}

// cmdPos is the start of a command: the line's start, after a separator,
// a subshell's or a group's opening, or inside a -c or eval argument; then
// shell keywords (then, do, ...), sudo or doas (with their options'
// values), env VAR=... and wrappers that run what follows; then an
// optional path.
const cmdPos = `(?:^|[;&|\n` + "`" + `({]|\$\(|(?:-c|eval)\s+["']|\b` + shells + `\s+-c\s+)\s*(?:(?:if|then|do|else|elif|while|until|!)\s+)*` +
	`(?:(?:sudo|doas)\s+(?:-[a-z]*[ugcdhprtu]\s+[^\s-]\S*\s+|-\S+\s+)*)?(?:env\s+(?:\w+=\S*\s+)*)?` +
	`(?:(?:exec|nohup|setsid|time|command|nice|stdbuf|busybox|xargs)\s+(?:-\S+\s+)*|watch\s+(?:-\S+\s+(?:\d\S*\s+)?)*|timeout\s+(?:-\S+\s+)*\S+\s+)*(?:[\w.+-]*/)*`

const blockDevice = `/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|md|dm-|loop|nbd)[a-z0-9]*|/dev/r?disk[0-9]|/dev/mapper/|/dev/disk/by-`

const shells = `(?:bash|sh|zsh|ksh|dash)`

// sensitive are files a command should not write without asking: system
// configuration, SSH keys, login scripts and credentials.
const sensitive = `(?:/etc/|~/\.ssh(?:/|\s|$)|~/\.(?:bashrc|zshrc|profile|bash_profile|zprofile|netrc|pgpass|npmrc|pypirc)\b)`

type rule struct {
	re  *regexp.Regexp
	key string
	// need are words one of which the command holds if the rule can match
	// at all: a command without them skips the regular expression, which
	// is most of the check's cost.
	need []string
}

func rules(pairs ...string) []rule {
	out := make([]rule, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		n, ok := needs[pairs[i+1]]
		if !ok {
			panic("guard: no needed words for rule " + pairs[i+1])
		}
		out = append(out, rule{regexp.MustCompile(pairs[i]), pairs[i+1], strings.Split(n, "|")})
	}
	return out
}

// needs are each rule's needed words (see rule.need), by its key, in
// lower case as the command is matched.
var needs = map[string]string{
	"recursive delete of root filesystem":                          "rm",
	"recursive delete of system directory":                         "rm",
	"recursive delete of home directory":                           "rm",
	"format filesystem (mkfs)":                                     "mkfs|mke2fs",
	"dd to raw block device":                                       "of=",
	"redirect to raw block device":                                 "/dev/",
	"wipe raw block device":                                        "/dev/",
	"fork bomb":                                                    ":(",
	"kill all processes":                                           "kill",
	"system shutdown/reboot":                                       "shutdown|reboot|halt|poweroff",
	"init 0/6 (shutdown/reboot)":                                   "init",
	"systemctl poweroff/reboot":                                    "systemctl",
	"delete in root path":                                          "rm",
	"recursive delete":                                             "rm",
	"recursive delete (long flag)":                                 "rm",
	"recursive delete (flags after operands)":                      "rm",
	"world/other-writable permissions":                             "chmod",
	"recursive chown to root":                                      "chown",
	"disk copy":                                                    "dd",
	"SQL DROP":                                                     "drop",
	"SQL TRUNCATE":                                                 "truncate",
	"overwrite system config":                                      "/etc/",
	"stop/restart system service":                                  "systemctl",
	"force kill processes":                                         "pkill",
	"force kill processes (killall -KILL)":                         "killall",
	"pipe remote content to shell":                                 "curl|wget",
	"execute remote script via process substitution":               "curl|wget",
	"execute remote content via command substitution":              "curl|wget",
	"pipe decoded content to shell (possible command obfuscation)": "base64|base32",
	"overwrite system file via tee":                                "tee",
	"overwrite system file via redirection":                        ">",
	"copy/move file into sensitive credential/SSH/shell-rc path":   "cp|mv|install",
	"in-place edit of sensitive credential/SSH/shell-rc path":      "sed",
	"xargs with rm":                                                "xargs",
	"find -exec/-execdir rm":                                       "find",
	"find -delete":                                                 "find",
	"git reset --hard (destroys uncommitted changes)":              "git",
	"git force push (rewrites remote history)":                     "git",
	"git force push short flag (rewrites remote history)":          "git",
	"git clean with force (deletes untracked files)":               "git",
	"git branch force delete (long flags)":                         "git",
	"git branch force delete":                                      "git",
	"cloud metadata endpoint access (instance credentials)":        "169.254.169.254|100.100.100.200|metadata.google.internal|fd00:ec2::254",
	"package manager uninstall":                                    "npm|pnpm|yarn|pip|brew",
	"kill atrium process (self-termination)":                       "atrium",
}

// matches says whether r matches command (in the case r is matched in).
func (r rule) matches(command string) bool {
	for _, w := range r.need {
		if strings.Contains(command, w) {
			return r.re.MatchString(command)
		}
	}
	return false
}

var rmFlags = cmdPos + `rm\s+(?:-\S*\s+)*`

// pathEnd ends a path operand: an optional closing quote, then a space, the
// end, or a separator.
const pathEnd = `["']?(?:\s|$|[;&|)` + "`" + `])`

var hardline = rules(
	rmFlags+`["']?/+(?:\.\.?/*)*\*?`+pathEnd, "recursive delete of root filesystem",
	rmFlags+`["']?/(?:home|root|etc|usr|var|bin|sbin|boot|lib|lib64|opt|srv)/?\*?`+pathEnd, "recursive delete of system directory",
	rmFlags+`["']?(?:~|\$home|\$\{home\})/?\*?`+pathEnd, "recursive delete of home directory",
	cmdPos+`(?:mkfs(?:\.[a-z0-9]+)?|mke2fs)(?:\s|$|[;&|)])`, "format filesystem (mkfs)",
	cmdPos+`dd\s[^\n]*\bof=["']?(?:`+blockDevice+`)`, "dd to raw block device",
	`>\s*["']?(?:`+blockDevice+`)`, "redirect to raw block device",
	cmdPos+`(?:wipefs\s[^\n;&|]*-[a-z]*a|blkdiscard|shred)\s[^\n;&|]*(?:`+blockDevice+`)`, "wipe raw block device",
	`:\(\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:`, "fork bomb",
	cmdPos+`kill\s+(?:-\S+\s+)*-1\s*(?:$|[;&|)\n])`, "kill all processes",
	cmdPos+`(?:shutdown|reboot|halt|poweroff)(?:\s|$|[;&|)])`, "system shutdown/reboot",
	cmdPos+`init\s+[06](?:\s|$|[;&|)])`, "init 0/6 (shutdown/reboot)",
	cmdPos+`systemctl\s+(?:-\S+\s+)*(?:poweroff|reboot|halt|kexec)\b`, "systemctl poweroff/reboot",
)

var dangerous = rules(
	`\brm\s+(?:-\S*\s+)*["']?/`, "delete in root path",
	`\brm\s+-\S*r`, "recursive delete",
	`\brm\s+(?:-\S*\s+)*--recursive\b`, "recursive delete (long flag)",
	`\brm\s+[^\n"';|&]*\s-[a-z]*r[a-z]*(?:\s|$)`, "recursive delete (flags after operands)",
	`\bchmod\s+(?:-\S*\s+)*(?:777|666|o\+[rwx]*w|a\+[rwx]*w)\b`, "world/other-writable permissions",
	`\bchown\s+(?:-\S*)?r\s+root`, "recursive chown to root",
	cmdPos+`dd\s+[^\n]*if=`, "disk copy",
	`\bdrop\s+(?:table|database)\b`, "SQL DROP",
	`\btruncate\s+(?:table\s+)?\w`, "SQL TRUNCATE",
	`>\s*["']?/etc/`, "overwrite system config",
	`\bsystemctl\s+(?:-\S+\s+)*(?:stop|restart|disable|mask)\b`, "stop/restart system service",
	`\bkill\s+-9\s+-1\b`, "kill all processes",
	`\bpkill\s+-9\b`, "force kill processes",
	`\bkillall\s+(?:-\S*\s+)*-(?:9|kill|sigkill)\b`, "force kill processes (killall -KILL)",
	`\b(?:curl|wget)\b[^\n]*\|\s*(?:\S*/)?`+shells+`(?:\s|$)`, "pipe remote content to shell",
	`\b`+shells+`\s+<\s*<?\s*\(\s*(?:curl|wget)\b`, "execute remote script via process substitution",
	`(?:\beval|\bsource|\.)\s*(?:\$\(|`+"`"+`)\s*(?:curl|wget)\b`, "execute remote content via command substitution",
	`\b(?:base64|base32)\s+(?:-d|--decode)\b[^\n]*\|\s*`+shells+`\b`, "pipe decoded content to shell (possible command obfuscation)",
	`\btee\b[^\n]*["']?`+sensitive, "overwrite system file via tee",
	`>>?\s*["']?`+sensitive, "overwrite system file via redirection",
	`\b(?:cp|mv|install)\b[^\n]*\s["']?`+sensitive+`[^\s]*["']?\s*(?:$|[;&|])`, "copy/move file into sensitive credential/SSH/shell-rc path",
	`\bsed\s+(?:-\S*i|--in-place)[^\n]*`+sensitive, "in-place edit of sensitive credential/SSH/shell-rc path",
	`\bxargs\s+[^\n]*\brm\b`, "xargs with rm",
	`\bfind\b[^\n]*-exec(?:dir)?\s+(?:/\S*/)?rm\b`, "find -exec/-execdir rm",
	`\bfind\b[^\n]*\s-delete\b`, "find -delete",
	`\bgit\s+reset\s+--h(?:a(?:r(?:d)?)?)?\b`, "git reset --hard (destroys uncommitted changes)",
	`\bgit\s+push\b[^\n]*--forc[a-z-]*\b`, "git force push (rewrites remote history)",
	`\bgit\s+push\b[^\n]*\s-f\b`, "git force push short flag (rewrites remote history)",
	`\bgit\s+clean\s+-\S*f`, "git clean with force (deletes untracked files)",
	`\bgit\s+branch\b[^;|&\n]*\s(?:-d|--delete)\b[^;|&\n]*\s(?:-f|--force)\b`, "git branch force delete (long flags)",
	`(?:^|[^\d.])(?:169\.254\.169\.254|100\.100\.100\.200)(?:$|[^\d.])|metadata\.google\.internal|fd00:ec2::254`, "cloud metadata endpoint access (instance credentials)",
	cmdPos+`(?:npm|pnpm|yarn|pip3?|brew)\s+(?:-\S+\s+)*(?:global\s+)?(?:uninstall|remove|rm|un)\b`, "package manager uninstall",
	`\b(?:pkill|killall)\b[^\n]*\batrium\b`, "kill atrium process (self-termination)",
)

// Case matters for these (git branch -D, not -d).
var dangerousCased = rules(
	`\bgit\s+branch\s+(?:\S+\s+)*-D\b`, "git branch force delete",
)

// userHome is the home folder a command's ~ stands for.
var userHome = os.UserHomeDir

var deleteFrom = regexp.MustCompile(`\bdelete\s+from\b`)
var where = regexp.MustCompile(`\bwhere\b`)

var (
	ifsRE      = regexp.MustCompile(`\$\{ifs[^}]*\}|\$ifs\b`)
	continueRE = regexp.MustCompile(`\\\r?\n`)
	escapeRE   = regexp.MustCompile(`\\([^\n])`)
	writesRE   = regexp.MustCompile(`>|\btee\b|\bsed\s+(?:-\S*i|--in-place)|\b(?:cp|mv|rm|truncate|install|ln|dd|chmod)\b|\b(?:perl|ruby)\s+-\S*i`)
)

// quotedRE is a plain word in quotes ("rm", r'm', "/"): the shell runs it
// as the bare word.
var quotedRE = regexp.MustCompile(`"([\w./-]+)"|'([\w./-]+)'`)

// ProtectedWrite is the rule of a command that writes the profile's own
// files: the approvals themselves are in config.yaml, so no reviewing
// model, which the agent's own text could sway, ever lets it run.
const ProtectedWrite = "write to the profile's config.yaml, .env or store"

// Check says what command could destroy (false: nothing it knows of).
// protected are files a command writes only with a person's approval:
// the profile's config.yaml (where its standing approvals are), .env and
// store.
func Check(command string, protected []string) (Danger, bool) {
	raw, lower := normalize(command)
	for _, r := range hardline {
		if r.matches(lower) {
			return Danger{Key: r.key, Hardline: true}, true
		}
	}
	for _, r := range dangerous {
		if r.matches(lower) {
			return Danger{Key: r.key}, true
		}
	}
	for _, r := range dangerousCased {
		if r.matches(raw) {
			return Danger{Key: r.key}, true
		}
	}
	for _, line := range strings.Split(lower, "\n") {
		if loc := deleteFrom.FindStringIndex(line); loc != nil && !where.MatchString(line[loc[1]:]) {
			return Danger{Key: "SQL DELETE without WHERE"}, true
		}
	}
	if writesRE.MatchString(lower) && mentionsProtected(raw, protected) {
		return Danger{Key: ProtectedWrite}, true
	}
	return Danger{}, false
}

// scriptRE finds a script a command runs by its file: sh x.sh, bash
// ./build, source env.sh, . ./env.sh, ./deploy.sh.
var scriptRE = regexp.MustCompile(`(?:^|[;&|\n(]\s*|\s)(?:(?:bash|sh|zsh|dash|ksh|source)\s+(?:-\S+\s+)*|\.\s+)?((?:\.{1,2}/|/|~/)?[\w./~+-]+)`)

// maxScript bounds a script read for the check.
const maxScript = 64 << 10

// CheckAt is Check, and also reads the shell scripts the command runs by
// their file (sh deploy.sh, ./deploy.sh, source env.sh) in dir, the
// command's folder: a script the agent wrote and then runs is checked as
// its own commands are. A script longer than 64 KB, binary or missing is
// not read.
func CheckAt(command, dir string, protected []string) (Danger, bool) {
	if d, found := Check(command, protected); found {
		return d, true
	}
	seen := map[string]bool{}
	for _, m := range scriptRE.FindAllStringSubmatch(command, 16) {
		name := m[1]
		runs := strings.HasPrefix(strings.TrimSpace(m[0]), ".") || strings.Contains(m[0], "sh ") || strings.Contains(m[0], "source ") ||
			strings.HasPrefix(name, "./") || strings.HasPrefix(name, "../") || strings.HasSuffix(name, ".sh")
		if !runs {
			continue
		}
		p := expandHome(name)
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if seen[p] {
			continue
		}
		seen[p] = true
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxScript {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil || binary(b[:min(len(b), sniffBytes)]) {
			continue
		}
		if d, found := Check(string(b), protected); found {
			d.Script = p
			return d, true
		}
	}
	return Danger{}, false
}

// normalize undoes what would hide a command from the rules: terminal
// escapes, NUL bytes, look-alike characters, line continuations, escaped
// and empty-quoted letters (r\m, r”m), quoted plain words ("rm") and $IFS
// for a space.
func normalize(command string) (raw, lower string) {
	s := ansiRE.ReplaceAllString(command, "")
	s = strings.ReplaceAll(s, "\x00", "")
	s = norm.NFKC.String(s)
	s = continueRE.ReplaceAllString(s, "")
	s = escapeRE.ReplaceAllString(s, "$1")
	s = strings.NewReplacer(`''`, "", `""`, "").Replace(s)
	s = quotedRE.ReplaceAllString(s, "$1$2")
	lower = ifsRE.ReplaceAllString(strings.ToLower(s), " ")
	if home, err := userHome(); err == nil && home != "/" {
		lower = strings.ReplaceAll(lower, strings.ToLower(home), "~")
	}
	return s, lower
}

// mentionsProtected reports whether the command names one of the files,
// or the folder they are in with one of their names.
func mentionsProtected(command string, protected []string) bool {
	for _, p := range protected {
		if p == "" {
			continue
		}
		if strings.Contains(command, p) {
			return true
		}
		base := filepath.Base(p)
		for _, v := range []string{"$HERMES_HOME/" + base, "${HERMES_HOME}/" + base, "$ATRIUM_HOME/" + base, "${ATRIUM_HOME}/" + base} {
			if strings.Contains(command, v) {
				return true
			}
		}
	}
	return false
}
