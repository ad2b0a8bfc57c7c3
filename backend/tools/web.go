package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// The familiar agent's web tools: web_search (a query: five results, each
// a title, a URL and a description) and web_extract (up to five URLs: each
// page's text as markdown), through the search provider its config names
// (web.backend) or whose key is set: Firecrawl (FIRECRAWL_API_KEY, or a
// self-hosted FIRECRAWL_API_URL) or Tavily (TAVILY_API_KEY). Atrium itself
// fetches no page: the provider does. A URL that names a private, loopback
// or link-local address, or a cloud's metadata service, is refused before
// the provider is asked (security.allow_private_urls lets private ones
// through; the metadata service never). The familiar agent has a model
// summarize a page over 5,000 characters; Atrium shows its first
// webPageChars instead, and says how much it left out.

// The web tools' names.
const (
	WebSearchTool  = "web_search"
	WebExtractTool = "web_extract"
)

// Web is config.yaml's web and security keys, and where the providers'
// keys are read.
type Web struct {
	// Backend is web.backend: firecrawl, tavily (or the familiar agent's
	// parallel and exa, which Atrium has not); "" picks the one whose key
	// is set, Firecrawl first.
	Backend string
	// AllowPrivateURLs is security.allow_private_urls: web_extract may name
	// a private address (a self-hosted provider on the same network).
	AllowPrivateURLs bool
	// Getenv reads the providers' keys and URLs (nil: the process's
	// environment, which holds the profile's .env).
	Getenv func(string) string
	// LookupIP resolves a host name for the address check (nil: the
	// system's resolver).
	LookupIP func(ctx context.Context, host string) ([]netip.Addr, error)
	// Client is the HTTP client the providers are asked with (nil: one
	// with webTimeout).
	Client *http.Client
	// Secrets are the values of the profile's keys and tokens now: a URL
	// holding one is never handed to a provider.
	Secrets []string
}

// Bounds of the web tools.
const (
	webResults   = 5                // results a search answers, as the familiar agent asks for
	webURLs      = 5                // URLs one web_extract reads
	webPageChars = 15_000           // characters of a page shown
	webBodyBytes = 8 << 20          // bytes of a provider's answer read
	webTimeout   = 60 * time.Second // one request to a provider
)

// Default providers' addresses.
const (
	firecrawlURL = "https://api.firecrawl.dev"
	tavilyURL    = "https://api.tavily.com"
)

func (w Web) env(name string) string {
	if w.Getenv != nil {
		return strings.TrimSpace(w.Getenv(name))
	}
	return strings.TrimSpace(os.Getenv(name))
}

// Provider is the web.backend in use, as the familiar agent picks it:
// the configured one, else the first whose key is set (Firecrawl,
// Parallel, Tavily, Exa), else Firecrawl.
func (w Web) Provider() string { return w.provider() }

// KeyVariable is the variable that holds the key of the provider in use
// ("" for one Atrium has not).
func (w Web) KeyVariable() string {
	switch w.provider() {
	case "firecrawl":
		return "FIRECRAWL_API_KEY"
	case "tavily":
		return "TAVILY_API_KEY"
	}
	return ""
}

// WebBackends are the web.backend values Atrium has.
var WebBackends = []string{"firecrawl", "tavily"}

func (w Web) provider() string {
	if b := strings.ToLower(strings.TrimSpace(w.Backend)); b == "firecrawl" || b == "tavily" || b == "parallel" || b == "exa" {
		return b
	}
	for _, p := range []struct{ name, key, url string }{{"firecrawl", "FIRECRAWL_API_KEY", "FIRECRAWL_API_URL"},
		{"parallel", "PARALLEL_API_KEY", ""}, {"tavily", "TAVILY_API_KEY", ""}, {"exa", "EXA_API_KEY", ""}} {
		if w.env(p.key) != "" || (p.url != "" && w.env(p.url) != "") {
			return p.name
		}
	}
	return "firecrawl"
}

// Problem says why the web tools are not offered ("" when they are): no
// provider's key is set, or the provider is one Atrium has not.
func (w Web) Problem() string {
	switch p := w.provider(); p {
	case "firecrawl":
		if w.env("FIRECRAWL_API_KEY") == "" && w.env("FIRECRAWL_API_URL") == "" {
			return "web search needs FIRECRAWL_API_KEY (or a self-hosted FIRECRAWL_API_URL) or TAVILY_API_KEY in the profile's .env"
		}
	case "tavily":
		if w.env("TAVILY_API_KEY") == "" {
			return "Tavily (web.backend) needs TAVILY_API_KEY in the profile's .env"
		}
	default:
		return p + " (web.backend) is not a provider Atrium has (firecrawl and tavily are): the web tools are not offered"
	}
	return ""
}

func webSearchTool() Tool {
	return Tool{Name: WebSearchTool, Toolset: "web", run: func(ctx context.Context, c *Call) any { return c.Settings.Web.search(ctx, c) },
		Description: "Search the web for information on any topic. Returns up to 5 relevant results with titles, URLs, and descriptions.",
		Parameters:  `{"type":"object","properties":{"query":{"type":"string","description":"The search query to look up on the web"}},"required":["query"]}`}
}

func webExtractTool() Tool {
	return Tool{Name: WebExtractTool, Toolset: "web", run: func(ctx context.Context, c *Call) any { return c.Settings.Web.extract(ctx, c) },
		Description: "Extract content from web page URLs (max 5 per call). Returns each page's content in markdown format, " +
			"PDF links included. A page over 15,000 characters shows its first 15,000 and says how many it left out. " +
			"A URL that fails names its error.",
		Parameters: `{"type":"object","properties":{"urls":{"type":"array","items":{"type":"string"},` +
			`"description":"List of URLs to extract content from (max 5 URLs per call)","maxItems":5}},"required":["urls"]}`}
}

// searchResult is one result of web_search, as the familiar agent answers
// it.
type searchResult struct {
	Title       string `json:"title"`
	URL         string `json:"url"`
	Description string `json:"description"`
	Position    int    `json:"position"`
}

func (w Web) search(ctx context.Context, c *Call) any {
	query, _ := c.str("query")
	if strings.TrimSpace(query) == "" {
		return failure("Error searching web: query is required")
	}
	if p := w.Problem(); p != "" {
		return failure("Error searching web: " + p)
	}
	if slices.ContainsFunc(w.Secrets, func(s string) bool { return len(s) >= 8 && strings.Contains(query, s) }) {
		return failure("Blocked: the query contains one of the profile's keys or tokens. Secrets must not be sent to a search provider.")
	}
	var results []searchResult
	var err error
	switch w.provider() {
	case "tavily":
		var out struct {
			Results []struct {
				Title   string `json:"title"`
				URL     string `json:"url"`
				Content string `json:"content"`
			} `json:"results"`
		}
		err = w.post(ctx, w.tavily("/search"), "", map[string]any{"query": query, "max_results": webResults,
			"include_raw_content": false, "include_images": false, "api_key": w.env("TAVILY_API_KEY")}, &out)
		for _, r := range out.Results {
			results = append(results, searchResult{Title: r.Title, URL: r.URL, Description: r.Content})
		}
	default:
		var out struct {
			Data struct {
				Web []struct {
					Title       string `json:"title"`
					URL         string `json:"url"`
					Description string `json:"description"`
				} `json:"web"`
			} `json:"data"`
		}
		err = w.post(ctx, w.firecrawl("/v2/search"), w.env("FIRECRAWL_API_KEY"), map[string]any{"query": query, "limit": webResults}, &out)
		for _, r := range out.Data.Web {
			results = append(results, searchResult{Title: r.Title, URL: r.URL, Description: r.Description})
		}
	}
	if err != nil {
		return failure("Error searching web: " + err.Error())
	}
	if len(results) > webResults {
		results = results[:webResults]
	}
	for i := range results {
		results[i].Position = i + 1
		results[i].Description = clipText(results[i].Description, 2000)
	}
	if results == nil {
		results = []searchResult{}
	}
	return map[string]any{"success": true, "data": map[string]any{"web": results}}
}

// webPage is one page of web_extract, as the familiar agent answers it.
type webPage struct {
	URL     string  `json:"url"`
	Title   string  `json:"title"`
	Content string  `json:"content"`
	Error   *string `json:"error"`
}

func failedPage(u, msg string) webPage { return webPage{URL: u, Error: &msg} }

func (w Web) extract(ctx context.Context, c *Call) any {
	items, _ := list(c.Args["urls"])
	var urls []string
	for _, it := range items {
		if s, ok := it.(string); ok && strings.TrimSpace(s) != "" && len(urls) < webURLs {
			urls = append(urls, strings.TrimSpace(s))
		}
	}
	if len(urls) == 0 {
		return failure("Content was inaccessible or not found")
	}
	if p := w.Problem(); p != "" {
		return failure("Error extracting content: " + p)
	}
	// A URL that carries a credential would hand it to a third party (and
	// to the page's owner): the whole call is refused, as the familiar
	// agent refuses it.
	for _, u := range urls {
		if why := w.carriesSecret(u); why != "" {
			return failure(why)
		}
	}
	var blocked, pages []webPage
	var safe []string
	for _, u := range urls {
		if why := w.unsafe(ctx, u); why != "" {
			blocked = append(blocked, failedPage(u, why))
			continue
		}
		safe = append(safe, u)
	}
	if len(safe) > 0 {
		if w.provider() == "tavily" {
			pages = w.tavilyExtract(ctx, safe)
		} else {
			for _, u := range safe {
				pages = append(pages, w.firecrawlScrape(ctx, u))
			}
		}
	}
	pages = append(blocked, pages...)
	for i := range pages {
		pages[i].Content = pageText(pages[i].Content)
		pages[i].Title = clipText(pages[i].Title, 500)
	}
	return map[string]any{"results": pages}
}

func (w Web) firecrawlScrape(ctx context.Context, u string) webPage {
	var out struct {
		Data struct {
			Markdown string `json:"markdown"`
			Metadata struct {
				Title     any    `json:"title"`
				SourceURL string `json:"sourceURL"`
			} `json:"metadata"`
		} `json:"data"`
	}
	if err := w.post(ctx, w.firecrawl("/v2/scrape"), w.env("FIRECRAWL_API_KEY"), map[string]any{"url": u, "formats": []string{"markdown"}}, &out); err != nil {
		return failedPage(u, err.Error())
	}
	final := out.Data.Metadata.SourceURL
	if final == "" {
		final = u
	}
	title, _ := out.Data.Metadata.Title.(string) // a page may have several: the first is not guessed
	return webPage{URL: final, Title: title, Content: out.Data.Markdown}
}

func (w Web) tavilyExtract(ctx context.Context, urls []string) []webPage {
	var out struct {
		Results []struct {
			URL        string `json:"url"`
			Title      string `json:"title"`
			RawContent string `json:"raw_content"`
			Content    string `json:"content"`
		} `json:"results"`
		Failed []struct {
			URL   string `json:"url"`
			Error string `json:"error"`
		} `json:"failed_results"`
	}
	if err := w.post(ctx, w.tavily("/extract"), "", map[string]any{"urls": urls, "include_images": false,
		"api_key": w.env("TAVILY_API_KEY")}, &out); err != nil {
		pages := make([]webPage, 0, len(urls))
		for _, u := range urls {
			pages = append(pages, failedPage(u, err.Error()))
		}
		return pages
	}
	var pages []webPage
	for _, r := range out.Results {
		text := r.RawContent
		if text == "" {
			text = r.Content
		}
		pages = append(pages, webPage{URL: r.URL, Title: r.Title, Content: text})
	}
	for _, f := range out.Failed {
		msg := f.Error
		if msg == "" {
			msg = "extraction failed"
		}
		pages = append(pages, failedPage(f.URL, msg))
	}
	return pages
}

func (w Web) firecrawl(path string) string {
	base := w.env("FIRECRAWL_API_URL")
	if base == "" {
		base = firecrawlURL
	}
	return strings.TrimRight(base, "/") + path
}

func (w Web) tavily(path string) string {
	base := w.env("TAVILY_API_URL")
	if base == "" {
		base = tavilyURL
	}
	return strings.TrimRight(base, "/") + path
}

// post asks a provider: body as JSON, the answer decoded into out. The
// answer is read up to webBodyBytes; an answer that is not 2xx is an
// error naming its status and what the provider said (never the key).
func (w Web) post(ctx context.Context, endpoint, bearer string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, webTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("the provider's address %s: %w", endpoint, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	client := w.Client
	if client == nil {
		client = &http.Client{Timeout: webTimeout}
	}
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the address is said once, by what follows
		}
		return fmt.Errorf("could not reach %s: %v", hostOf(endpoint), err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, webBodyBytes+1))
	if err != nil {
		return fmt.Errorf("reading the answer of %s: %v", hostOf(endpoint), err)
	}
	if len(data) > webBodyBytes {
		return fmt.Errorf("the answer of %s is over %d MiB", hostOf(endpoint), webBodyBytes>>20)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error  any `json:"error"`
			Detail any `json:"detail"`
		}
		_ = json.Unmarshal(data, &e)
		said := text(e.Error)
		if said == "" {
			said = text(e.Detail)
		}
		if said == "" {
			said = string(data)
		}
		return fmt.Errorf("%s answered %s: %s", hostOf(endpoint), resp.Status, clipText(strings.TrimSpace(said), 300))
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("the answer of %s is not the JSON expected: %v", hostOf(endpoint), err)
	}
	return nil
}

func hostOf(endpoint string) string {
	if u, err := url.Parse(endpoint); err == nil && u.Host != "" {
		return u.Host
	}
	return endpoint
}

// Addresses web_extract never names, whatever security.allow_private_urls
// says: the clouds' metadata services.
var (
	metadataHosts = []string{"metadata.google.internal", "metadata.goog"}
	metadataAddrs = []netip.Addr{netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("169.254.170.2"),
		netip.MustParseAddr("169.254.169.253"), netip.MustParseAddr("100.100.100.200"), netip.MustParseAddr("fd00:ec2::254")}
	cgnat     = netip.MustParsePrefix("100.64.0.0/10")
	linkLocal = netip.MustParsePrefix("169.254.0.0/16")
)

// unsafe says why web_extract may not hand u to the provider ("" when it
// may): not an http(s) URL, or a host that names or resolves to a private,
// loopback, link-local or reserved address (one that cannot be resolved
// too: the check fails closed, unless a proxy resolves names for this
// process), or a cloud's metadata service.
func (w Web) unsafe(ctx context.Context, u string) string {
	const blocked = "Blocked: URL targets a private or internal network address"
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Hostname() == "" {
		return "not an http or https URL"
	}
	host := strings.TrimSuffix(strings.ToLower(p.Hostname()), ".")
	for _, h := range metadataHosts {
		if host == h {
			return blocked
		}
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		lookup := w.LookupIP
		if lookup == nil {
			lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
				return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
			}
		}
		lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if addrs, err = lookup(lctx, host); err != nil || len(addrs) == 0 {
			if w.proxied() {
				return "" // a proxy resolves names for this process: the check cannot, and leaves it to them
			}
			return blocked + " (its host name could not be resolved)"
		}
	}
	for _, a := range addrs {
		if blockedAddr(a.Unmap(), w.AllowPrivateURLs) {
			return blocked
		}
	}
	return ""
}

// blockedAddr says a is no address to fetch from: a cloud's metadata
// service or link-local always; a private, loopback, reserved or other
// non-public one unless allowPrivate.
func blockedAddr(a netip.Addr, allowPrivate bool) bool {
	if slices.Contains(metadataAddrs, a) || linkLocal.Contains(a) {
		return true
	}
	return !allowPrivate && (a.IsPrivate() || a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsMulticast() || a.IsUnspecified() || cgnat.Contains(a) || !a.IsGlobalUnicast())
}

// proxied says this process reaches the web through a proxy (HTTPS_PROXY,
// HTTP_PROXY or ALL_PROXY): then a name it cannot resolve itself is no
// reason to refuse, as the familiar agent reads it.
func (w Web) proxied() bool {
	for _, v := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"} {
		if w.env(v) != "" {
			return true
		}
	}
	return false
}

// Credential-named query parameters, as the familiar agent lists them:
// their value is a credential whatever its shape.
var credentialParams = []string{"access_token", "api_key", "apikey", "auth_token", "authorization", "awsaccesskeyid",
	"client_secret", "credential", "credentials", "jwt", "password", "passwd", "secret", "session_id", "signature", "token",
	"x_amz_security_token", "x_amz_signature", "x-amz-security-token", "x-amz-signature"}

// keyShapes are the shapes of well-known providers' keys and tokens, each
// starting a word ("ask-the-experts" holds no key).
var keyShapes = regexp.MustCompile(`\b(?:sk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|` +
	`xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35}|glpat-[A-Za-z0-9_-]{20,}|hf_[A-Za-z0-9]{20,}|` +
	`fc-[0-9a-f]{20,}|tvly-[A-Za-z0-9_-]{10,}|eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,})`)

// carriesSecret says why u may not leave Atrium ("" when it may): it holds
// one of the profile's keys, something shaped as a key or a token, a
// credential-named query parameter, or a user name and password.
func (w Web) carriesSecret(u string) string {
	forms := []string{u}
	if un, err := url.QueryUnescape(u); err == nil && un != u {
		forms = append(forms, un)
	}
	for _, f := range forms {
		if keyShapes.MatchString(f) || slices.ContainsFunc(w.Secrets, func(s string) bool { return len(s) >= 8 && strings.Contains(f, s) }) {
			return "Blocked: URL contains what appears to be an API key or token. Secrets must not be sent in URLs."
		}
	}
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	if p.User != nil {
		return "Blocked: URL contains a user name or password. Web extract backends are third-party readers; credentials must not be sent in URLs."
	}
	for key, values := range p.Query() {
		if slices.Contains(credentialParams, strings.ToLower(key)) && slices.ContainsFunc(values, func(v string) bool { return v != "" }) {
			return "Blocked: URL contains a credential-like query parameter (" + key + "). Web extract backends are third-party " +
				"readers; remove the sensitive query parameter or use a local browser session when this access is explicitly required."
		}
	}
	return ""
}

var inlineImage = regexp.MustCompile(`data:image/[a-zA-Z0-9.+-]+;base64,[A-Za-z0-9+/=]{64,}`)

// pageText is a page's text as the model reads it: inline images (base64)
// taken out, and the first webPageChars characters of a longer page.
func pageText(s string) string {
	s = inlineImage.ReplaceAllString(s, "[BASE64_IMAGE_REMOVED]")
	if n := utf8.RuneCountInString(s); n > webPageChars {
		cut := 0
		for i := range s {
			if cut == webPageChars {
				return s[:i] + fmt.Sprintf("\n\n[... %d more characters of this page not shown: web_extract shows the first %d]", n-webPageChars, webPageChars)
			}
			cut++
		}
	}
	return s
}

// clipText bounds a text a provider sent to n characters.
func clipText(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "..."
}
