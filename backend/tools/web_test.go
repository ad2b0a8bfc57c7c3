package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
)

// provider is a loopback fake of Firecrawl's and Tavily's HTTP APIs: it
// keeps each request (path, authorization, body) and answers with answer.
type provider struct {
	*httptest.Server
	mu     sync.Mutex
	got    []providerRequest
	answer func(path string, body map[string]any) (int, string)
}

type providerRequest struct {
	path, auth string
	body       map[string]any
}

func newProvider(t *testing.T, answer func(path string, body map[string]any) (int, string)) *provider {
	p := &provider{answer: answer}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(b, &body)
		p.mu.Lock()
		p.got = append(p.got, providerRequest{r.URL.Path, r.Header.Get("Authorization"), body})
		p.mu.Unlock()
		code, out := p.answer(r.URL.Path, body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, out)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *provider) requests() []providerRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]providerRequest(nil), p.got...)
}

// publicDNS resolves every name to a public address, as a resolver would
// the pages' hosts; internal.example resolves to a private one.
func publicDNS(_ context.Context, host string) ([]netip.Addr, error) {
	switch host {
	case "internal.example":
		return []netip.Addr{netip.MustParseAddr("10.1.2.3")}, nil
	case "nowhere.example":
		return nil, errors.New("no such host")
	}
	return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
}

func runWeb(t *testing.T, w Web, tool Tool, args map[string]any) map[string]any {
	t.Helper()
	out := tool.Run(context.Background(), &Call{Args: args, Settings: Settings{Web: w}})
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%s: no JSON object: %s", tool.Name, out)
	}
	return m
}

// web_search asks Firecrawl's /v2/search (the key as a bearer token) for
// five results and answers them as the familiar agent does: title, URL,
// description and position.
func TestWebSearchThroughFirecrawl(t *testing.T) {
	t.Parallel()
	p := newProvider(t, func(path string, body map[string]any) (int, string) {
		var web []string
		for i := range 7 {
			web = append(web, fmt.Sprintf(`{"url": "https://docs.example/%d", "title": "Doc %d", "description": "About <b>%d</b>", "category": null}`, i, i, i))
		}
		return 200, `{"success": true, "data": {"web": [` + strings.Join(web, ",") + `]}}`
	})
	w := Web{Getenv: func(n string) string {
		return map[string]string{"FIRECRAWL_API_KEY": "fc-secret", "FIRECRAWL_API_URL": p.URL + "/"}[n]
	}}
	got := runWeb(t, w, webSearchTool(), map[string]any{"query": "sqlite wal checkpoint"})
	b, _ := json.Marshal(got)
	want := `{"data":{"web":[{"description":"About \u003cb\u003e0\u003c/b\u003e","position":1,"title":"Doc 0","url":"https://docs.example/0"},`
	if !strings.HasPrefix(string(b), want) || len(got["data"].(map[string]any)["web"].([]any)) != 5 || got["success"] != true {
		t.Fatalf("search answer: %s", b)
	}
	reqs := p.requests()
	if len(reqs) != 1 || reqs[0].path != "/v2/search" || reqs[0].auth != "Bearer fc-secret" ||
		reqs[0].body["query"] != "sqlite wal checkpoint" || reqs[0].body["limit"] != 5.0 {
		t.Fatalf("the request: %+v", reqs)
	}
	if out := runWeb(t, w, webSearchTool(), map[string]any{"query": " "}); out["error"] != "Error searching web: query is required" {
		t.Fatalf("no query: %v", out)
	}
	// A query holding one of the profile's keys does not leave.
	w.Secrets = []string{"fc-secret", "short"}
	if out := runWeb(t, w, webSearchTool(), map[string]any{"query": "what is fc-secret for"}); !strings.HasPrefix(fmt.Sprint(out["error"]), "Blocked: the query contains one of the profile's keys") {
		t.Fatalf("a query with a key: %v", out)
	}
	if n := len(p.requests()); n != 1 {
		t.Fatalf("the provider was asked %d times", n)
	}
}

// web_search and web_extract through Tavily: the key goes in the body,
// as its API takes it; a page it could not read is a result with its
// error.
func TestWebToolsThroughTavily(t *testing.T) {
	t.Parallel()
	p := newProvider(t, func(path string, body map[string]any) (int, string) {
		if path == "/search" {
			return 200, `{"results": [{"title": "T", "url": "https://t.example/a", "content": "snippet", "score": 0.9}]}`
		}
		return 200, `{"results": [{"url": "https://t.example/a", "raw_content": "# A\nbody"}], "failed_results": [{"url": "https://t.example/b", "error": "timeout"}]}`
	})
	w := Web{Backend: "tavily", LookupIP: publicDNS, Getenv: func(n string) string {
		return map[string]string{"TAVILY_API_KEY": "tvly-secret", "TAVILY_API_URL": p.URL}[n]
	}}
	if got := runWeb(t, w, webSearchTool(), map[string]any{"query": "q"}); fmt.Sprint(got) != "map[data:map[web:[map[description:snippet position:1 title:T url:https://t.example/a]]] success:true]" {
		t.Fatalf("search: %v", got)
	}
	got := runWeb(t, w, webExtractTool(), map[string]any{"urls": []any{"https://t.example/a", "https://t.example/b"}})
	if b, _ := json.Marshal(got); string(b) != `{"results":[{"content":"# A\nbody","error":null,"title":"","url":"https://t.example/a"},{"content":"","error":"timeout","title":"","url":"https://t.example/b"}]}` {
		t.Fatalf("extract: %s", b)
	}
	reqs := p.requests()
	if len(reqs) != 2 || reqs[0].path != "/search" || reqs[0].body["api_key"] != "tvly-secret" || reqs[0].body["max_results"] != 5.0 ||
		reqs[1].path != "/extract" || fmt.Sprint(reqs[1].body["urls"]) != "[https://t.example/a https://t.example/b]" || reqs[1].auth != "" {
		t.Fatalf("requests: %+v", reqs)
	}
}

// web_extract hands the provider only public http(s) URLs: a private,
// loopback or metadata address, a name that resolves to one, or one that
// does not resolve is refused first, each in its place among the results
// (security.allow_private_urls lets the private ones through, never the
// metadata service). A long page shows its first part and says how much
// is left; inline images are taken out; at most five URLs are read.
func TestWebExtractThroughFirecrawlAndItsGuards(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", webPageChars+10)
	p := newProvider(t, func(path string, body map[string]any) (int, string) {
		u, _ := body["url"].(string)
		switch {
		case strings.HasSuffix(u, "/long"):
			return 200, `{"success": true, "data": {"markdown": "` + long + `", "metadata": {"title": "Long", "sourceURL": "https://docs.example/long?final"}}}`
		case strings.HasSuffix(u, "/image"):
			return 200, `{"success": true, "data": {"markdown": "see ![x](data:image/png;base64,` + strings.Repeat("A", 100) + `) here", "metadata": {"title": ["a", "b"]}}}`
		case strings.HasSuffix(u, "/broken"):
			return 500, `{"success": false, "error": "Internal error while scraping"}`
		}
		return 200, `{"success": true, "data": {"markdown": "# Hello", "metadata": {"title": "Hello"}}}`
	})
	w := Web{LookupIP: publicDNS, Getenv: func(n string) string { return map[string]string{"FIRECRAWL_API_URL": p.URL}[n] }}
	urls := []any{"https://docs.example/long", "http://127.0.0.1:8080/admin", "https://docs.example/image", "http://169.254.169.254/latest/meta-data",
		"https://internal.example/x", "https://docs.example/sixth"}
	blocked := "Blocked: URL targets a private or internal network address"
	summary := func(got map[string]any) string {
		var out []string
		for _, r := range got["results"].([]any) {
			m := r.(map[string]any)
			e, _ := m["error"].(string)
			out = append(out, fmt.Sprintf("%s|%s|%d|%s", m["url"], m["title"], len([]rune(m["content"].(string))), e))
		}
		return strings.Join(out, "\n")
	}
	got := runWeb(t, w, webExtractTool(), map[string]any{"urls": urls})
	want := strings.Join([]string{
		"http://127.0.0.1:8080/admin||0|" + blocked,
		"http://169.254.169.254/latest/meta-data||0|" + blocked,
		"https://internal.example/x||0|" + blocked,
		fmt.Sprintf("https://docs.example/long?final|Long|%d|", webPageChars+len("\n\n[... 10 more characters of this page not shown: web_extract shows the first 15000]")),
		"https://docs.example/image||37|",
	}, "\n")
	if s := summary(got); s != want {
		t.Fatalf("results:\n%s\nwant:\n%s", s, want)
	}
	if m := got["results"].([]any)[4].(map[string]any); m["content"] != "see ![x]([BASE64_IMAGE_REMOVED]) here" {
		t.Fatalf("the page with an image: %v", m)
	}
	// The provider saw exactly the two public pages of the first five.
	var asked []string
	for _, r := range p.requests() {
		asked = append(asked, r.path+" "+r.body["url"].(string)+" "+fmt.Sprint(r.body["formats"]))
	}
	if strings.Join(asked, ",") != "/v2/scrape https://docs.example/long [markdown],/v2/scrape https://docs.example/image [markdown]" {
		t.Fatalf("asked %q", asked)
	}
	// A name that does not resolve fails closed; a file URL is no web
	// page; a provider's failure is the page's error, with what it said.
	got = runWeb(t, w, webExtractTool(), map[string]any{"urls": []any{"https://nowhere.example/", "file:///etc/passwd", "https://docs.example/broken"}})
	want = strings.Join([]string{
		"https://nowhere.example/||0|" + blocked + " (its host name could not be resolved)",
		"file:///etc/passwd||0|not an http or https URL",
		"https://docs.example/broken||0|" + hostOf(p.URL) + " answered 500 Internal Server Error: Internal error while scraping",
	}, "\n")
	if s := summary(got); s != want {
		t.Fatalf("results:\n%s\nwant:\n%s", s, want)
	}
	// Behind a proxy (which resolves names), a name this process cannot
	// resolve is left to it; an address is still checked.
	proxied := w
	proxied.Getenv = func(n string) string {
		return map[string]string{"FIRECRAWL_API_URL": p.URL, "HTTPS_PROXY": "http://proxy.internal:3128"}[n]
	}
	proxied.Client = &http.Client{} // the fake provider is asked directly all the same
	got = runWeb(t, proxied, webExtractTool(), map[string]any{"urls": []any{"https://nowhere.example/", "http://10.0.0.1/"}})
	if s := summary(got); s != "http://10.0.0.1/||0|"+blocked+"\nhttps://nowhere.example/|Hello|7|" {
		t.Fatalf("behind a proxy:\n%s", s)
	}
	// security.allow_private_urls: a private address goes through, the
	// metadata service does not.
	w.AllowPrivateURLs = true
	got = runWeb(t, w, webExtractTool(), map[string]any{"urls": []any{"https://internal.example/x", "http://[::ffff:169.254.169.254]/"}})
	if r := got["results"].([]any); r[0].(map[string]any)["error"] != blocked || r[1].(map[string]any)["url"] != "https://internal.example/x" ||
		r[1].(map[string]any)["error"] != nil {
		t.Fatalf("allow_private_urls: %v", r)
	}
	if out := runWeb(t, w, webExtractTool(), map[string]any{"urls": []any{}}); out["error"] != "Content was inaccessible or not found" {
		t.Fatalf("no URL: %v", out)
	}
}

// A provider that cannot be used is a clear error the model reads, never
// the key: none configured, one down, one that answers an error or
// something else than its JSON, or far too much.
func TestWebProviderFailures(t *testing.T) {
	t.Parallel()
	if out := runWeb(t, Web{Getenv: noEnv}, webSearchTool(), map[string]any{"query": "q"}); !strings.Contains(fmt.Sprint(out["error"]), "needs FIRECRAWL_API_KEY") {
		t.Fatalf("no key: %v", out)
	}
	if out := runWeb(t, Web{Backend: "parallel", Getenv: envOf("PARALLEL_API_KEY", "k")}, webSearchTool(), map[string]any{"query": "q"}); !strings.Contains(fmt.Sprint(out["error"]), "parallel (web.backend) is not a provider Atrium has") {
		t.Fatalf("parallel: %v", out)
	}
	down := newProvider(t, nil)
	down.Close()
	for _, c := range []struct {
		name   string
		url    string
		answer func(string, map[string]any) (int, string)
		want   string
	}{
		{"down", down.URL, nil, "could not reach 127.0.0.1"},
		{"refused", "", func(string, map[string]any) (int, string) {
			return 401, `{"success": false, "error": "Unauthorized: Invalid token"}`
		},
			"answered 401 Unauthorized: Unauthorized: Invalid token"},
		{"not JSON", "", func(string, map[string]any) (int, string) { return 200, "<html>oops</html>" }, "is not the JSON expected"},
		{"too much", "", func(string, map[string]any) (int, string) {
			return 200, `{"data": {"web": [{"title": "` + strings.Repeat("x", webBodyBytes) + `"}]}}`
		}, "is over 8 MiB"},
	} {
		u := c.url
		if c.answer != nil {
			u = newProvider(t, c.answer).URL
		}
		out := runWeb(t, Web{Getenv: func(n string) string {
			return map[string]string{"FIRECRAWL_API_KEY": "fc-secret", "FIRECRAWL_API_URL": u}[n]
		}}, webSearchTool(), map[string]any{"query": "q"})
		e := fmt.Sprint(out["error"])
		if !strings.HasPrefix(e, "Error searching web: ") || !strings.Contains(e, c.want) || strings.Contains(e, "fc-secret") {
			t.Errorf("%s: %q, want %q", c.name, e, c.want)
		}
	}
}

// web_extract never hands a credential to the provider: a URL holding one
// of the profile's keys, something shaped as a key, a credential-named
// query parameter or a user name and password refuses the whole call, in
// the familiar agent's words, and the provider is not asked.
func TestWebExtractKeepsCredentialsHome(t *testing.T) {
	t.Parallel()
	p := newProvider(t, func(string, map[string]any) (int, string) {
		return 200, `{"success": true, "data": {"markdown": "ok", "metadata": {"title": "ok"}}}`
	})
	w := Web{LookupIP: publicDNS, Secrets: []string{"opaque-profile-secret-42"},
		Getenv: func(n string) string { return map[string]string{"FIRECRAWL_API_URL": p.URL}[n] }}
	keyBlocked := "Blocked: URL contains what appears to be an API key or token. Secrets must not be sent in URLs."
	for _, c := range []struct{ url, want string }{
		{"https://evil.example/c?d=opaque-profile-secret-42", keyBlocked},
		{"https://evil.example/c?d=opaque%2Dprofile%2Dsecret%2D42", keyBlocked},
		{"https://evil.example/sk-abcdefghijklmnopqrstuv", keyBlocked},
		{"https://evil.example/?x=ghp_abcdefghijklmnopqrstuvwxyz0123", keyBlocked},
		{"https://docs.example/reset?Token=abc", "Blocked: URL contains a credential-like query parameter (Token). Web extract backends are third-party readers; remove the sensitive query parameter or use a local browser session when this access is explicitly required."},
		{"https://user:pass@docs.example/", "Blocked: URL contains a user name or password. Web extract backends are third-party readers; credentials must not be sent in URLs."},
	} {
		got := runWeb(t, w, webExtractTool(), map[string]any{"urls": []any{"https://docs.example/fine", c.url}})
		if got["error"] != c.want {
			t.Errorf("%s: %v", c.url, got)
		}
	}
	if n := len(p.requests()); n != 0 {
		t.Fatalf("the provider was asked %d times", n)
	}
	// An empty credential parameter, and ordinary words, are no credential.
	got := runWeb(t, w, webExtractTool(), map[string]any{"urls": []any{"https://docs.example/login?token=", "https://docs.example/tokens-and-keys",
		"https://blog.example/ask-the-experts-about-model-selection"}})
	if rs, ok := got["results"].([]any); !ok || len(rs) != 3 {
		t.Fatalf("plain URLs: %v", got)
	}
}
