package gateway

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"
)

// The agent sends a file to a chat as the familiar agent does: a
// MEDIA:<path> tag in its reply (a tool's result, such as a text-to-speech
// tool's, hands it the tag). [[audio_as_voice]] anywhere in the reply
// sends its audio as a voice message where the platform has them;
// [[as_document]] sends its images as files, uncompressed. The tags and
// directives are taken out of the text the chat is shown; each file goes
// as a message of its own after the text, from the outbox like any reply.

// File kinds, which decide how a platform sends a file.
const (
	KindImage    = "image"
	KindVideo    = "video"
	KindAudio    = "audio"
	KindVoice    = "voice" // audio sent as a voice message ([[audio_as_voice]])
	KindDocument = "document"
	KindSticker  = "sticker" // a Telegram sticker a person sent
)

// OutFile is a file a reply carries.
type OutFile struct {
	Path string `json:"path"`
	Name string `json:"name"`
	Kind string `json:"kind"`
	Size int64  `json:"size"`
}

// FileSender is an adapter that can send files: SendFile sends m.File
// (read now), with m.Text as its caption when there is one, and returns
// the platform's id for the message. A file the platform cannot take (too
// large) is a Permanent error that says so.
type FileSender interface {
	SendFile(ctx context.Context, m Message) (string, error)
}

// The directives a reply may carry, message-wide.
const (
	voiceDirective    = "[[audio_as_voice]]"
	documentDirective = "[[as_document]]"
)

var (
	imageExts = map[string]bool{".png": true, ".jpg": true, ".jpeg": true, ".gif": true, ".webp": true}
	videoExts = map[string]bool{".mp4": true, ".mov": true, ".avi": true, ".mkv": true, ".webm": true}
	audioExts = map[string]bool{".ogg": true, ".opus": true, ".mp3": true, ".wav": true, ".m4a": true, ".flac": true}
	// bareExts end a bare path that has spaces in it (MEDIA:/a b/c.png),
	// as the familiar agent's pattern reads one.
	bareExts = []string{".png", ".jpg", ".jpeg", ".gif", ".webp", ".mp4", ".mov", ".avi", ".mkv", ".webm", ".ogg", ".opus", ".mp3", ".wav", ".m4a"}
)

// mediaRef is one MEDIA: tag: the path as written, and whether the reply
// asked for its audio as a voice message.
type mediaRef struct {
	Path  string
	Voice bool
}

// ParseMedia takes the MEDIA:<path> tags and the directives out of a
// reply: the files in order (each path once), the text without them, and
// whether [[as_document]] was given. A tag inside a fenced code block is
// text (a reply explaining the tag), left as it is. A path may be quoted
// ("…", '…', `…`); a bare one ends at white space, or, when it starts with
// / or ~/, at the first known media extension followed by white space or
// punctuation (so /a b/c.png is one path).
func ParseMedia(text string) (refs []mediaRef, cleaned string, asDocument bool) {
	voice := strings.Contains(text, voiceDirective)
	asDocument = strings.Contains(text, documentDirective)
	if !voice && !asDocument && !strings.Contains(text, "MEDIA:") {
		return nil, text, false // most replies: nothing to take out
	}
	var b strings.Builder
	seen := map[string]bool{}
	inFence := false
	lines := strings.SplitAfter(text, "\n")
	for _, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			b.WriteString(line)
			continue
		}
		if inFence {
			b.WriteString(line)
			continue
		}
		line = strings.ReplaceAll(strings.ReplaceAll(line, voiceDirective, ""), documentDirective, "")
		for {
			i := strings.Index(line, "MEDIA:")
			if i < 0 {
				b.WriteString(line)
				break
			}
			start := i
			var path string
			var n int
			if start > 0 && strings.ContainsRune("`\"'", rune(line[start-1])) {
				start-- // an opening quote around the whole tag: the path ends at its closing one
				rest := line[i+len("MEDIA:"):]
				if j := strings.IndexByte(rest, line[start]); j > 0 && !strings.HasPrefix(strings.TrimSpace(rest), string(line[start])) {
					path, n = strings.Trim(strings.TrimSpace(rest[:j]), "`\"'"), j
				}
			}
			if path == "" {
				path, n = mediaPath(line[i+len("MEDIA:"):])
			}
			if path == "" {
				b.WriteString(line[:i+len("MEDIA:")])
				line = line[i+len("MEDIA:"):]
				continue
			}
			end := i + len("MEDIA:") + n
			if end < len(line) && strings.ContainsRune("`\"'", rune(line[end])) {
				end++ // its closing quote
			}
			b.WriteString(line[:start])
			line = line[end:]
			if !seen[path] {
				seen[path] = true
				refs = append(refs, mediaRef{Path: path, Voice: voice && audioExts[strings.ToLower(filepath.Ext(path))]})
			}
		}
	}
	cleaned = b.String()
	if len(refs) > 0 || voice || asDocument {
		cleaned = tidy(cleaned)
	}
	return refs, cleaned, asDocument
}

// mediaPath reads the path after "MEDIA:" at the start of s: the path, and
// how many bytes of s it took ("" when there is none).
func mediaPath(s string) (string, int) {
	lead := len(s) - len(strings.TrimLeft(s, " \t"))
	rest := s[lead:]
	if rest == "" {
		return "", 0
	}
	if q := rest[0]; q == '`' || q == '"' || q == '\'' {
		end := strings.IndexByte(rest[1:], q)
		if end < 0 {
			return "", 0
		}
		p := strings.TrimSpace(rest[1 : 1+end])
		return p, lead + end + 2
	}
	if strings.HasPrefix(rest, "/") || strings.HasPrefix(rest, "~/") {
		// The shortest run of the line, spaces allowed, that ends in a
		// known extension before white space, punctuation or the end.
		lineEnd := strings.IndexByte(rest, '\n')
		if lineEnd < 0 {
			lineEnd = len(rest)
		}
		low := strings.ToLower(rest[:lineEnd])
		best := -1
		for _, ext := range bareExts {
			for from := 0; ; {
				j := strings.Index(low[from:], ext)
				if j < 0 {
					break
				}
				end := from + j + len(ext)
				if end == lineEnd || strings.ContainsRune(" \t\r`\"',;:)]}", rune(low[end])) {
					if best < 0 || end < best {
						best = end
					}
					break
				}
				from = end
			}
		}
		// A path with no space before its extension is read as a bare
		// one below (it may carry punctuation after it).
		if best >= 0 && strings.ContainsAny(rest[:best], " \t") {
			return rest[:best], lead + best
		}
	}
	end := strings.IndexFunc(rest, unicode.IsSpace)
	if end < 0 {
		end = len(rest)
	}
	p := strings.TrimRight(rest[:end], "`\"',.;:)}]")
	return p, lead + len(p)
}

// tidy drops the blank lines and spaces a tag left behind.
func tidy(s string) string {
	lines := strings.Split(s, "\n")
	out := lines[:0]
	blank := 0
	for _, l := range lines {
		l = strings.TrimRight(l, " \t")
		if l == "" {
			blank++
			if blank > 1 {
				continue
			}
		} else {
			blank = 0
		}
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// fileKind is how a file is sent: its kind by its name (kindOf), an image
// as a document when asked, audio as a voice message when asked.
func fileKind(path string, voice, asDocument bool) string {
	switch k := kindOf("", path); {
	case k == KindImage && asDocument:
		return KindDocument
	case k == KindAudio && voice:
		return KindVoice
	default:
		return k
	}
}

// SplitReply turns a reply into what the outbox sends: its text (without
// the tags, with a line for each file that cannot go: missing, a folder,
// one policy refuses), then a message per file. A reply without tags is
// itself. The files are read when they are sent.
func SplitReply(o Outbound, policy MediaPolicy) []Outbound {
	refs, cleaned, asDoc := ParseMedia(o.Text)
	if len(refs) == 0 && cleaned == o.Text {
		return []Outbound{o}
	}
	text := o
	text.Text = cleaned
	var files []Outbound
	var problems []string
	for _, r := range refs {
		f, err := policy.outFile(r, asDoc)
		if err != nil {
			problems = append(problems, fmt.Sprintf("⚠️ Could not send %s: %v", filepath.Base(r.Path), err))
			continue
		}
		fo := o
		fo.Text, fo.Buttons, fo.File = "", nil, &f
		files = append(files, fo)
	}
	if len(problems) > 0 {
		text.Text = strings.TrimSpace(text.Text + "\n\n" + strings.Join(problems, "\n"))
	}
	var out []Outbound
	if strings.TrimSpace(text.Text) != "" || len(text.Buttons) > 0 {
		out = append(out, text)
	}
	return append(out, files...)
}

// MediaPolicy is which local files a reply's MEDIA: tags may send, as the
// familiar gateway decides it (the path is the model's to write, so this
// is where a prompt-injected "MEDIA:~/.ssh/id_rsa" stops). A file under
// Allowed always goes. Otherwise, by default, any file goes that is not
// under a system folder (/etc, /proc, /sys, /dev, /root, /boot, /var/log,
// /var/lib, /var/run), a credentials folder of the home (~/.ssh, ~/.aws,
// ~/.gnupg, ~/.kube, ~/.docker, ~/.config, ~/.azure, ~/.gcloud,
// ~/Library/Keychains), or one of Denied; in strict mode only a file
// made within Recent does (for a bot strangers talk to). Symbolic links
// are followed before any of it.
type MediaPolicy struct {
	Allowed []string      // always sent from: the profile's media folder, gateway.media_delivery_allow_dirs (~/ is home)
	Denied  []string      // never sent: the profile's own files and folders (its config, .env, store)
	Strict  bool          // gateway.strict: beyond Allowed, only files made within Recent
	Recent  time.Duration // strict mode's trust in a file just made (0: none)
	Home    string        // the user's home folder ("": the process's)
}

var (
	deniedSystem = []string{"/etc", "/proc", "/sys", "/dev", "/root", "/boot", "/var/log", "/var/lib", "/var/run"}
	deniedInHome = []string{".ssh", ".aws", ".gnupg", ".kube", ".docker", ".config", ".azure", ".gcloud", "Library/Keychains"}
)

// outFile checks a tag's file now (it is read again when sent).
func (p MediaPolicy) outFile(r mediaRef, asDoc bool) (OutFile, error) {
	home := p.Home
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	path := strings.TrimPrefix(r.Path, "file://")
	if home == "" && inHome(path) {
		return OutFile{}, fmt.Errorf("there is no home folder to find %s in", path)
	}
	path = tilde(path, home)
	if !filepath.IsAbs(path) {
		return OutFile{}, fmt.Errorf("%s is not an absolute path", path)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		if os.IsNotExist(err) {
			return OutFile{}, fmt.Errorf("no such file")
		}
		return OutFile{}, fmt.Errorf("cannot read it (%v)", unwrapPath(err))
	}
	fi, err := os.Stat(real)
	switch {
	case err != nil:
		return OutFile{}, fmt.Errorf("cannot read it (%v)", unwrapPath(err))
	case fi.IsDir():
		return OutFile{}, fmt.Errorf("it is a folder")
	case !fi.Mode().IsRegular():
		return OutFile{}, fmt.Errorf("it is not a regular file")
	case fi.Size() == 0:
		return OutFile{}, fmt.Errorf("it is empty")
	}
	if err := p.may(real, fi, home); err != nil {
		return OutFile{}, err
	}
	return OutFile{Path: real, Name: filepath.Base(path), Kind: fileKind(path, r.Voice, asDoc), Size: fi.Size()}, nil
}

// may says why the file at real (symbolic links followed) may not go.
func (p MediaPolicy) may(real string, fi os.FileInfo, home string) error {
	for _, root := range p.Allowed {
		if within(real, resolved(tilde(root, home))) {
			return nil
		}
	}
	for _, d := range p.Denied {
		if within(real, resolved(d)) {
			return fmt.Errorf("it holds the profile's configuration or secrets")
		}
	}
	rhome := ""
	if home != "" {
		rhome = resolved(home)
	}
	for _, d := range deniedSystem {
		// The user's own home (/root, for a gateway run as root) is not
		// denied as a whole: its credential folders are, below.
		if rd := resolved(d); rd != rhome && within(real, rd) {
			return fmt.Errorf("files are never sent from %s", d)
		}
	}
	if rhome != "" {
		for _, sub := range deniedInHome {
			if within(real, filepath.Join(rhome, filepath.FromSlash(sub))) {
				return fmt.Errorf("files are never sent from ~/%s, where credentials are kept", sub)
			}
		}
	}
	if p.Strict && (p.Recent <= 0 || time.Since(fi.ModTime()) > p.Recent) {
		only := "gateway.strict sends only files in the profile's media folder or gateway.media_delivery_allow_dirs"
		if p.Recent > 0 {
			return fmt.Errorf("%s, or made in the last %s", only, humanDuration(p.Recent))
		}
		return fmt.Errorf("%s", only)
	}
	return nil
}

// inHome: p is written from the home folder (~ or ~/...).
func inHome(p string) bool { return p == "~" || strings.HasPrefix(p, "~/") }

// tilde is p with a leading ~ as home (p itself without a home).
func tilde(p, home string) string {
	if home == "" || !inHome(p) {
		return p
	}
	return filepath.Join(home, strings.TrimPrefix(p, "~"))
}

// resolved is p with its symbolic links followed, as far as they exist.
func resolved(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// within: p is root or under it.
func within(p, root string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// humanDuration is d as a person says it ("10 minutes", "minute").
func humanDuration(d time.Duration) string {
	switch {
	case d == time.Minute:
		return "minute"
	case d%time.Minute == 0:
		return fmt.Sprintf("%d minutes", int(d/time.Minute))
	}
	return fmt.Sprintf("%d seconds", int(d/time.Second))
}

// unwrapPath is an os error without the path it repeats.
func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// openFile opens an outbox file to send, checking it is still the file
// it was (a regular file) and at most limit bytes (0: any).
func openFile(f *OutFile, platform string, limit int64) (*os.File, int64, error) {
	fh, err := os.Open(f.Path)
	if err != nil {
		return nil, 0, Permanent(fmt.Errorf("%s: %v", f.Name, unwrapPath(err)))
	}
	fi, err := fh.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("not a regular file")
	}
	if err != nil {
		fh.Close()
		return nil, 0, Permanent(fmt.Errorf("%s: %v", f.Name, err))
	}
	if limit > 0 && fi.Size() > limit {
		fh.Close()
		return nil, 0, Permanent(fmt.Errorf("%s is %s, larger than the %s %s takes from a bot", f.Name, humanSize(fi.Size()), humanSize(limit), platform))
	}
	return fh, fi.Size(), nil
}

// humanSize is n bytes as a person reads it.
func humanSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
