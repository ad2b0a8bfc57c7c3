package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"
)

// Files on Slack. A file a person shares comes in its message's files
// (file_share): the adapter hands each on with a Fetch that GETs its
// private URL with the bot token, which needs the files:read scope. A
// file the agent sends goes by Slack's upload flow
// (files.getUploadURLExternal, the bytes to the upload URL it gives,
// files.completeUploadExternal to share it in the conversation), which
// needs files:write.

// slackMaxFile is the largest file Slack takes from an app.
const slackMaxFile = 1 << 30

// slackFilesReadHint and slackFilesWriteHint say what a workspace that
// refuses a file needs; Slack's own answers (an HTML sign-in page,
// missing_scope) say nothing a person can act on.
const (
	slackFilesReadHint  = "the Slack app needs the files:read scope to read the files people send: add it under OAuth & Permissions, then reinstall the app"
	slackFilesWriteHint = "the Slack app needs the files:write scope to send files: add it under OAuth & Permissions, then reinstall the app"
)

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

// SendFile implements FileSender with Slack's upload flow: an upload URL
// for the file's name and length (files.getUploadURLExternal), the bytes
// posted there, then files.completeUploadExternal shares it in the
// conversation, in the thread when there is one (as Send posts the text),
// m.Text as its comment. Every kind goes as a file (Slack shows images
// and plays audio and video inline; a bot has no voice messages). Slack
// answers no message ts for the share: the file's id stands for it.
func (s *Slack) SendFile(ctx context.Context, m Message) (string, error) {
	if m.File == nil {
		return s.Send(ctx, m)
	}
	fh, size, err := openFile(m.File, "Slack", slackMaxFile)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	if size == 0 {
		// Slack refuses a length of 0 (missing_argument), every time.
		return "", Permanent(fmt.Errorf("%s: it is empty", m.File.Name))
	}
	up, err := s.api.GetUploadURLExternalContext(ctx, slack.GetUploadURLExternalParameters{FileName: m.File.Name, FileSize: int(size)})
	if err != nil {
		return "", slackFileError("files.getUploadURLExternal", err)
	}
	if err := s.upload(ctx, up.UploadURL, io.LimitReader(fh, size), size); err != nil {
		return "", err
	}
	_, err = s.api.CompleteUploadExternalContext(ctx, slack.CompleteUploadExternalParameters{
		Files: []slack.FileSummary{{ID: up.FileID, Title: m.File.Name}}, Channel: m.ChatID, ThreadTimestamp: m.ThreadID, InitialComment: m.Text})
	if err != nil {
		return "", slackFileError("files.completeUploadExternal", err)
	}
	if m.ThreadID != "" {
		// As a message posted in the thread, the share takes its status down.
		s.mu.Lock()
		delete(s.status, m.ChatID+"/"+m.ThreadID)
		s.mu.Unlock()
	}
	return up.FileID, nil
}

// upload posts size bytes of body to the upload URL Slack gave, as they
// are (Slack takes raw bytes or a form). The URL is Slack's own for this
// one file: the token is not sent. Its answers are classified as the Web
// API's are (a rate limit waits, another 4xx is permanent).
func (s *Slack) upload(ctx context.Context, link string, body io.Reader, size int64) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, link, body)
	if err != nil {
		return Permanent(fmt.Errorf("slack: the upload URL Slack gave: %w", err))
	}
	req.ContentLength = size
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := s.fileClient.Do(req)
	if err != nil {
		return fmt.Errorf("slack: uploading the file: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	switch {
	case resp.StatusCode/100 == 2:
		return nil
	case resp.StatusCode == http.StatusTooManyRequests:
		secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		return slackError("file upload", &slack.RateLimitedError{RetryAfter: time.Duration(max(secs, 1)) * time.Second})
	}
	return slackError("file upload", slack.StatusCodeError{Code: resp.StatusCode, Status: resp.Status})
}

// slackFileError is slackError for the upload methods, a workspace that
// has not granted files:write said in words a person can act on.
func slackFileError(method string, err error) error {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) && se.Err == "missing_scope" {
		return Permanent(fmt.Errorf("%s (slack %s: missing_scope)", slackFilesWriteHint, method))
	}
	return slackError(method, err)
}
