package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// Files on Slack. A file a person shares comes in its message's files
// (file_share): the adapter hands each on with a Fetch that GETs its
// private URL with the bot token, which needs the files:read scope.

// slackFilesReadHint says what a workspace that refuses a file needs;
// Slack's own answer (an HTML sign-in page) says nothing a person can act
// on.
const slackFilesReadHint = "the Slack app needs the files:read scope to read the files people send: add it under OAuth & Permissions, then reinstall the app"

// slackFile is what the adapter reads of a file object in a message
// event. slack-go's File has no subtype, which tells an audio clip
// recorded in Slack (slack_audio) from an uploaded audio file.
type slackFile struct {
	ID                 string `json:"id"`
	Name               string `json:"name"`
	Title              string `json:"title"`
	Mimetype           string `json:"mimetype"`
	Filetype           string `json:"filetype"`
	Subtype            string `json:"subtype"`
	Mode               string `json:"mode"`
	IsExternal         bool   `json:"is_external"`
	Size               int64  `json:"size"`
	DurationMS         int64  `json:"duration_ms"`
	URLPrivate         string `json:"url_private"`
	URLPrivateDownload string `json:"url_private_download"`
}

// inFiles are the files of the message event in body (a callback as it
// came), in order. Skipped: a file Slack hides (tombstone: deleted;
// hidden_by_limit: beyond a free workspace's storage), one hosted
// elsewhere (its bytes are not Slack's to hand over), one without a URL.
func (s *Slack) inFiles(body []byte) []InFile {
	var cb struct {
		Event struct {
			Files []slackFile `json:"files"`
		} `json:"event"`
	}
	if json.Unmarshal(body, &cb) != nil {
		return nil
	}
	var out []InFile
	for _, f := range cb.Event.Files {
		link := f.URLPrivateDownload
		if link == "" {
			link = f.URLPrivate
		}
		if f.Mode == "tombstone" || f.Mode == "hidden_by_limit" || f.Mode == "external" || f.IsExternal || link == "" {
			continue
		}
		in := InFile{Name: f.name(), MIME: f.Mimetype, Size: f.Size}
		in.Kind = kindOf(f.Mimetype, in.Name)
		if f.Subtype == "slack_audio" {
			// A clip recorded in Slack is a voice message, whatever its
			// container says (Slack labels some video/mp4).
			in.Kind = KindVoice
			if f.DurationMS > 0 {
				in.Duration = int((f.DurationMS + 500) / 1000)
			}
		}
		mimeType := f.Mimetype
		in.Fetch = func(ctx context.Context) (io.ReadCloser, error) { return s.fetchFile(ctx, link, mimeType) }
		out = append(out, in)
	}
	return out
}

// name is the file's name, else its title, else one made up from its id
// and type.
func (f slackFile) name() string {
	if n := strings.TrimSpace(f.Name); n != "" {
		return n
	}
	if n := strings.TrimSpace(f.Title); n != "" {
		return n
	}
	n := "slack-file"
	if f.ID != "" {
		n = "slack-" + f.ID
	}
	if t := f.Filetype; t != "" && !strings.ContainsAny(t, `/\. `) {
		n += "." + t
	}
	return n
}

// fetchFile GETs a file's private URL with the bot token. Slack answers a
// token that may not read files (no files:read) with its sign-in page, as
// HTML, not with an error: an HTML page for a file that is not one is
// that refusal.
func (s *Slack) fetchFile(ctx context.Context, link, mimeType string) (io.ReadCloser, error) {
	if !s.tokenMayGo(link) {
		return nil, fmt.Errorf("the file's address is not Slack's (%s): the bot token is not sent there", hostOf(link))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, link, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+s.o.Token)
	resp, err := s.fileClient.Do(req)
	if err != nil {
		return nil, scrub(fmt.Errorf("slack: fetching the file: %w", err), s.o.Token)
	}
	if resp.StatusCode/100 != 2 {
		resp.Body.Close()
		return nil, fmt.Errorf("the file's URL answered %s; %s", resp.Status, slackFilesReadHint)
	}
	got, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	want, _, _ := mime.ParseMediaType(mimeType)
	if got == "text/html" && want != "text/html" {
		resp.Body.Close()
		return nil, fmt.Errorf("got Slack's sign-in page instead of the file; %s", slackFilesReadHint)
	}
	return resp.Body, nil
}

// tokenMayGo reports whether the bot token may be sent to link: an https
// address of Slack's, or the Web API's own host (the address the adapter
// was given, which tests point at a fake).
func (s *Slack) tokenMayGo(link string) bool {
	u, err := url.Parse(link)
	if err != nil {
		return false
	}
	host := strings.ToLower(u.Hostname())
	if u.Scheme == "https" && (host == "slack.com" || strings.HasSuffix(host, ".slack.com") || host == "slack-gov.com" || strings.HasSuffix(host, ".slack-gov.com")) {
		return true
	}
	api, err := url.Parse(s.o.APIURL)
	return err == nil && api.Host != "" && u.Scheme == api.Scheme && strings.EqualFold(u.Host, api.Host)
}

// hostOf is link's host, for an error that should not carry the whole
// address.
func hostOf(link string) string {
	if u, err := url.Parse(link); err == nil && u.Host != "" {
		return u.Host
	}
	return "an address that does not parse"
}
