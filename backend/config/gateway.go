package config

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Gateway is config.yaml's gateway section: the chat platforms the agent
// answers on. Tokens and signing secrets are never in the file: each
// adapter names the environment variable that holds it.
type Gateway struct {
	// Autostart: the window and `atrium serve` run the gateway while they
	// are open (`atrium gateway run` always does).
	Autostart bool      `yaml:"autostart"`
	Telegram  *Telegram `yaml:"telegram"`
	Slack     *Slack    `yaml:"slack"`
	Discord   *Discord  `yaml:"discord"`
	Webhook   *Webhook  `yaml:"webhook"`
	// DeliveryDeadlineMinutes: a reply that could not be sent is retried
	// with backoff this long before it is given up (default 1440, a day).
	DeliveryDeadlineMinutes *float64 `yaml:"delivery_deadline_minutes"`
	// ApprovalTimeoutMinutes: how long a tool call a plugin wants approved
	// waits for the sender's /approve or /deny in the chat before it is
	// refused (default 5).
	ApprovalTimeoutMinutes *float64 `yaml:"approval_timeout_minutes"`
	// MaxFileMB bounds a file a person sends that the gateway saves for
	// the agent (default 20; at most 2048).
	MaxFileMB *float64 `yaml:"max_file_mb"`
	// Which local files a reply's MEDIA: tags may send, in the familiar
	// gateway's keys: Strict sends only files in the profile's media
	// folder or MediaAllowDirs, or made within TrustRecentSeconds (default
	// 600) unless TrustRecentFiles is false; else (the default) any file
	// not in a system or credentials folder. Over HERMES_MEDIA_DELIVERY_STRICT,
	// HERMES_MEDIA_ALLOW_DIRS, HERMES_MEDIA_TRUST_RECENT_FILES and
	// HERMES_MEDIA_TRUST_RECENT_SECONDS.
	Strict             *bool    `yaml:"strict"`
	MediaAllowDirs     IDList   `yaml:"media_delivery_allow_dirs"`
	TrustRecentFiles   *bool    `yaml:"trust_recent_files"`
	TrustRecentSeconds *float64 `yaml:"trust_recent_files_seconds"`
	// STTEchoTranscripts sends the chat what a voice message was heard to
	// say (🎙️ "…") before the agent's answer, as the familiar gateway's
	// stt_echo_transcripts (default true).
	STTEchoTranscripts *bool `yaml:"stt_echo_transcripts"`
}

// EchoTranscripts is stt_echo_transcripts (default true).
func (g Gateway) EchoTranscripts() bool { return g.STTEchoTranscripts == nil || *g.STTEchoTranscripts }

// MediaDelivery is the policy of a reply's files (see Strict), the
// config's keys over the familiar variables getenv reads: strict mode,
// the folders always allowed (a leading ~/ left for the gateway to
// expand), strict mode's trust in a file just made
// (0: none); and what is wrong with a variable (its default holds).
func (g Gateway) MediaDelivery(getenv func(string) string) (strict bool, allow []string, recent time.Duration, notes []string) {
	flag := func(name string, def bool) bool {
		switch v := strings.ToLower(strings.TrimSpace(getenv(name))); v {
		case "":
			return def
		case "1", "true", "yes", "on":
			return true
		case "0", "false", "no", "off":
			return false
		default:
			notes = append(notes, fmt.Sprintf("%s=%q is not a yes or a no; %v holds", name, v, def))
			return def
		}
	}
	strict = flag("HERMES_MEDIA_DELIVERY_STRICT", false)
	if g.Strict != nil {
		strict = *g.Strict
	}
	chunks := []string(g.MediaAllowDirs)
	if chunks == nil {
		chunks = []string{getenv("HERMES_MEDIA_ALLOW_DIRS")}
	}
	allow, relative := mediaDirs(chunks)
	for _, d := range relative {
		notes = append(notes, fmt.Sprintf("media_delivery_allow_dirs: %q is not an absolute path; left out", d))
	}
	trust := flag("HERMES_MEDIA_TRUST_RECENT_FILES", true)
	if g.TrustRecentFiles != nil {
		trust = *g.TrustRecentFiles
	}
	seconds := 600.0
	if v := strings.TrimSpace(getenv("HERMES_MEDIA_TRUST_RECENT_SECONDS")); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 {
			seconds = f
		} else {
			notes = append(notes, fmt.Sprintf("HERMES_MEDIA_TRUST_RECENT_SECONDS=%q is not a number of seconds; 600 holds", v))
		}
	}
	if g.TrustRecentSeconds != nil {
		seconds = *g.TrustRecentSeconds
	}
	if trust {
		recent = time.Duration(seconds * float64(time.Second))
	}
	return strict, allow, recent, notes
}

// mediaDirs are the folders media_delivery_allow_dirs lists (each entry
// may hold several between the path list separator or commas, as the
// familiar HERMES_MEDIA_ALLOW_DIRS does): those absolute (or in the home,
// ~/...; the gateway expands it), and those not.
func mediaDirs(chunks []string) (dirs, relative []string) {
	for _, chunk := range chunks {
		for _, part := range strings.FieldsFunc(chunk, func(r rune) bool { return r == os.PathListSeparator || r == ',' }) {
			switch d := strings.TrimSpace(part); {
			case d == "":
			case filepath.IsAbs(d) || d == "~" || strings.HasPrefix(d, "~/"):
				dirs = append(dirs, d)
			default:
				relative = append(relative, d)
			}
		}
	}
	return dirs, relative
}

// MaxFileBytes is MaxFileMB in bytes (0: the gateway's default).
func (g Gateway) MaxFileBytes() int64 {
	if g.MaxFileMB == nil {
		return 0
	}
	return int64(*g.MaxFileMB * (1 << 20))
}

// Access is who may talk to an adapter. Deny by default: with both lists
// empty nobody may.
type Access struct {
	AllowedUsers IDList `yaml:"allowed_users"`
	AllowedChats IDList `yaml:"allowed_chats"`
	// UnauthorizedDM is what a person not let in who writes in a DM is
	// answered: pair (a pairing code), ignore (nothing) or refuse (told
	// once, with their id). Unset: the familiar unauthorized_dm_behavior
	// (top level, or the platform's section), else pair when the platform
	// lets nobody in, refuse when it lists someone.
	UnauthorizedDM string `yaml:"unauthorized_dm_behavior"`
	// HomeChannel is where the gateway speaks first on the platform
	// (chat_id or chat_id:thread_id): a scheduled job delivering to the
	// bare platform name posts there. A chat's /sethome wins over it;
	// unset, the familiar <PLATFORM>_HOME_CHANNEL.
	HomeChannel string `yaml:"home_channel"`
}

// homeChannel checks a home channel: chat_id[:thread_id], no spaces.
func checkHome(field, v string) error {
	if v != "" && !homePattern.MatchString(v) {
		return fmt.Errorf("%s must be chat_id or chat_id:thread_id, not %q", field, v)
	}
	return nil
}

var homePattern = regexp.MustCompile(`^[^:\s]{1,128}(?::[^\s]{1,128})?$`)

// checkUnknownDM checks an unauthorized_dm_behavior.
func checkUnknownDM(field, v string) error {
	switch v {
	case "", "pair", "ignore", "refuse":
		return nil
	}
	return fmt.Errorf("%s must be pair, ignore or refuse, not %q", field, v)
}

// Telegram is the Telegram adapter (Bot API, long polling).
type Telegram struct {
	Access             `yaml:",inline"`
	TokenEnv           string `yaml:"token_env"` // default TELEGRAM_BOT_TOKEN
	BaseURL            string `yaml:"base_url"`  // default https://api.telegram.org
	PollTimeoutSeconds int    `yaml:"poll_timeout_seconds"`
	// TextBatch is how a person's quick text messages are gathered
	// (GatewayWithFamiliarEnv fills it).
	TextBatch TextBatch `yaml:"-"`
}

// TextBatch is the familiar gateway's text batching on a platform: a
// person's text messages in a chat that come within Wait of each other
// are one message to the agent, and after a long part (a message the
// client split) the next is waited for SplitWait. Zero: none gathered.
type TextBatch struct {
	Wait, SplitWait time.Duration
}

// Text batching's defaults, the familiar gateway's.
const (
	DefaultTextBatchWait      = 600 * time.Millisecond
	DefaultTextBatchSplitWait = 2 * time.Second
)

// textBatchOf is platform's text batching as the familiar variables set it
// ($HERMES_<PLATFORM>_TEXT_BATCH_DELAY_SECONDS, 0.6; 0 gathers none, and
// _SPLIT_DELAY_SECONDS, 2.0), with a note for a value that is no number
// of seconds from 0 to 10 (the default holds).
func textBatchOf(platform string, getenv func(string) string) (b TextBatch, notes []string) {
	b = TextBatch{Wait: DefaultTextBatchWait, SplitWait: DefaultTextBatchSplitWait}
	for _, v := range []struct {
		name string
		to   *time.Duration
	}{{"DELAY", &b.Wait}, {"SPLIT_DELAY", &b.SplitWait}} {
		name := "HERMES_" + strings.ToUpper(platform) + "_TEXT_BATCH_" + v.name + "_SECONDS"
		raw := strings.TrimSpace(getenv(name))
		if raw == "" {
			continue
		}
		f, err := strconv.ParseFloat(raw, 64)
		if err != nil || math.IsNaN(f) || f < 0 || f > 10 {
			notes = append(notes, fmt.Sprintf("%s=%s is not a number of seconds from 0 to 10: the default holds", name, raw))
			continue
		}
		*v.to = time.Duration(f * float64(time.Second))
	}
	if b.Wait == 0 {
		b.SplitWait = 0
	}
	return b, notes
}

// Slack is the Slack adapter (events in Socket Mode or from the Events API
// over HTTP, Web API for replies).
type Slack struct {
	Access           `yaml:",inline"`
	TokenEnv         string `yaml:"token_env"`          // default SLACK_BOT_TOKEN
	SigningSecretEnv string `yaml:"signing_secret_env"` // default SLACK_SIGNING_SECRET (the Events API)
	AppTokenEnv      string `yaml:"app_token_env"`      // default SLACK_APP_TOKEN (Socket Mode)
	// Mode: socket (Socket Mode, the familiar gateway's), events (the
	// Events API posting to listen), or auto (default): socket when the
	// app-level token is set.
	Mode   string `yaml:"mode"`
	Listen string `yaml:"listen"`  // default 127.0.0.1:8790
	APIURL string `yaml:"api_url"` // default https://slack.com/api
}

// Webhook is the generic adapter: signed JSON POSTs in, signed replies out.
type Webhook struct {
	Access    `yaml:",inline"`
	SecretEnv string `yaml:"secret_env"` // default ATRIUM_WEBHOOK_SECRET
	Listen    string `yaml:"listen"`     // default 127.0.0.1:8791
	ReplyURL  string `yaml:"reply_url"`  // where replies are POSTed (required)
	Name      string `yaml:"platform"`   // the platform name it reports (default "webhook")
}

// IDList is a list of platform ids; numbers and strings are both accepted
// (Telegram ids are numbers, Slack ids strings).
type IDList []string

// UnmarshalYAML reads a list of numbers or strings, or one string of ids
// between commas (as the familiar agent's channel lists are written).
func (l *IDList) UnmarshalYAML(unmarshal func(any) error) error {
	var one string
	if err := unmarshal(&one); err == nil {
		*l = idsOf(one)
		if *l == nil {
			*l = IDList{}
		}
		return nil
	}
	var raw []any
	if err := unmarshal(&raw); err != nil {
		return err
	}
	out := make(IDList, 0, len(raw))
	for _, v := range raw {
		switch x := v.(type) {
		case string:
			out = append(out, strings.TrimSpace(x))
		case int:
			out = append(out, strconv.Itoa(x))
		case int64:
			out = append(out, strconv.FormatInt(x, 10))
		case uint64:
			out = append(out, strconv.FormatUint(x, 10))
		case float64:
			out = append(out, strconv.FormatFloat(x, 'f', -1, 64))
		default:
			return fmt.Errorf("an id must be a number or a string, not %v", v)
		}
	}
	*l = out
	return nil
}

// Contains reports whether id is in the list.
func (l IDList) Contains(id string) bool {
	for _, x := range l {
		if x == id {
			return true
		}
	}
	return false
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate checks the gateway section.
func (g Gateway) Validate() error {
	for _, b := range g.blocks() {
		if err := checkUnknownDM("gateway."+b.name+".unauthorized_dm_behavior", b.access.UnauthorizedDM); err != nil {
			return err
		}
		if err := checkHome("gateway."+b.name+".home_channel", b.access.HomeChannel); err != nil {
			return err
		}
	}
	if d := g.DeliveryDeadlineMinutes; d != nil && *d <= 0 {
		return fmt.Errorf("gateway.delivery_deadline_minutes must be positive")
	}
	if _, relative := mediaDirs(g.MediaAllowDirs); len(relative) > 0 {
		return fmt.Errorf("gateway.media_delivery_allow_dirs: %q is not an absolute path", relative[0])
	}
	if s := g.TrustRecentSeconds; s != nil && *s < 0 {
		return fmt.Errorf("gateway.trust_recent_files_seconds must not be negative")
	}
	if m := g.MaxFileMB; m != nil && (*m <= 0 || *m > 2048) {
		return fmt.Errorf("gateway.max_file_mb must be more than 0 and at most 2048")
	}
	if d := g.ApprovalTimeoutMinutes; d != nil && (*d <= 0 || *d > 60) {
		return fmt.Errorf("gateway.approval_timeout_minutes must be more than 0 and at most 60")
	}
	if t := g.Telegram; t != nil {
		if err := checkEnv("gateway.telegram.token_env", t.TokenEnv); err != nil {
			return err
		}
		if err := checkURL("gateway.telegram.base_url", t.BaseURL); err != nil {
			return err
		}
		if t.PollTimeoutSeconds < 0 || t.PollTimeoutSeconds > 300 {
			return fmt.Errorf("gateway.telegram.poll_timeout_seconds must be 0 to 300")
		}
	}
	if s := g.Slack; s != nil {
		switch s.Mode {
		case "", "auto", "socket", "events":
		default:
			return fmt.Errorf("gateway.slack.mode must be auto, socket or events, not %q", s.Mode)
		}
		for k, v := range map[string]string{"token_env": s.TokenEnv, "signing_secret_env": s.SigningSecretEnv, "app_token_env": s.AppTokenEnv} {
			if err := checkEnv("gateway.slack."+k, v); err != nil {
				return err
			}
		}
		if err := checkURL("gateway.slack.api_url", s.APIURL); err != nil {
			return err
		}
		if err := checkListen("gateway.slack.listen", s.Listen); err != nil {
			return err
		}
	}
	if d := g.Discord; d != nil {
		if err := checkEnv("gateway.discord.token_env", d.TokenEnv); err != nil {
			return err
		}
		if err := checkURL("gateway.discord.api_url", d.APIURL); err != nil {
			return err
		}
		if err := d.validate("gateway.discord"); err != nil {
			return err
		}
		if m := d.UploadLimitMB; m != nil && (*m <= 0 || *m > 500) {
			return fmt.Errorf("gateway.discord.upload_limit_mb must be more than 0 and at most 500")
		}
	}
	if w := g.Webhook; w != nil {
		if err := checkEnv("gateway.webhook.secret_env", w.SecretEnv); err != nil {
			return err
		}
		if err := checkURL("gateway.webhook.reply_url", w.ReplyURL); err != nil {
			return err
		}
		if err := checkListen("gateway.webhook.listen", w.Listen); err != nil {
			return err
		}
		if w.Name != "" && !regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`).MatchString(w.Name) {
			return fmt.Errorf("gateway.webhook.platform %q: lower-case letters, digits, '-' or '_'", w.Name)
		}
	}
	return nil
}

func checkEnv(field, v string) error {
	if v != "" && !envName.MatchString(v) {
		return fmt.Errorf("%s must name an environment variable (the secret itself never goes in config.yaml), not %q", field, clipSecret(v))
	}
	return nil
}

// clipSecret shows at most a few characters of what may be a pasted token.
func clipSecret(v string) string {
	if len(v) > 6 {
		return v[:3] + "…"
	}
	return v
}

func checkURL(field, v string) error {
	if v == "" {
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s must be an http(s) URL, not %q", field, v)
	}
	return nil
}

func checkListen(field, v string) error {
	if v == "" {
		return nil
	}
	if _, _, err := net.SplitHostPort(v); err != nil {
		return fmt.Errorf("%s must be host:port, not %q", field, v)
	}
	return nil
}

// Secret reads the secret an adapter's *_env setting names (def when
// unset); "" when the variable is empty or missing.
func Secret(envVar, def string) (name, value string) {
	if envVar == "" {
		envVar = def
	}
	return envVar, os.Getenv(envVar)
}

// block is one platform block of the gateway section: its key under
// gateway:, and the Access every block has.
type block struct {
	name   string
	access *Access
}

// blocks are the platform blocks the section has, in a fixed order; each
// Access is the block's own (changing it changes the block).
func (g Gateway) blocks() []block {
	var out []block
	if g.Telegram != nil {
		out = append(out, block{"telegram", &g.Telegram.Access})
	}
	if g.Slack != nil {
		out = append(out, block{"slack", &g.Slack.Access})
	}
	if g.Discord != nil {
		out = append(out, block{"discord", &g.Discord.Access})
	}
	if g.Webhook != nil {
		out = append(out, block{"webhook", &g.Webhook.Access})
	}
	return out
}
