package app

import (
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// CodeForbidden is the error code of a state-changing request from another
// origin.
const CodeForbidden = "forbidden"

// safeMethod reports the methods that change nothing (RFC 9110 §9.2.1).
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions || m == http.MethodTrace
}

// refuseCrossSite guards every state-changing request, by method, so a route
// added later is covered too. A page on another origin can make a browser
// send a POST with the dashboard's cookie (another port of 127.0.0.1 gets a
// SameSite cookie): such a request is refused when its Origin (or, without
// one, its Referer) is not this server's own, when the browser marks it as
// not same-origin (Sec-Fetch-Site), and an API write must be
// application/json, which no cross-site form or simple request can send.
// Requests without Origin or Referer (curl, scripts with the token) are not
// browsers acting for a page and pass. It reports whether it answered.
func refuseCrossSite(w http.ResponseWriter, r *http.Request) bool {
	if safeMethod(r.Method) {
		return false
	}
	if why := crossSite(r); why != "" {
		writeJSON(w, http.StatusForbidden, ErrorDTO{Code: CodeForbidden,
			Message: "refused a " + r.Method + " from another site (" + why + "): the dashboard takes changes only from its own pages"})
		return true
	}
	if isAPI(r.URL.Path) {
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/json" {
			writeJSON(w, http.StatusUnsupportedMediaType, ErrorDTO{Code: "invalid",
				Message: "an API " + r.Method + " must be sent as Content-Type: application/json"})
			return true
		}
	}
	return false
}

// crossSite says why r does not come from this server's own origin, or "".
func crossSite(r *http.Request) string {
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "", "same-origin", "none":
	default:
		return "Sec-Fetch-Site: " + site
	}
	own := "http://" + r.Host
	if r.TLS != nil {
		own = "https://" + r.Host
	}
	if o := r.Header.Get("Origin"); o != "" {
		if !strings.EqualFold(o, own) {
			return "Origin " + trimHeader(o)
		}
		return ""
	}
	if ref := r.Header.Get("Referer"); ref != "" {
		u, err := url.Parse(ref)
		if err != nil || !strings.EqualFold(u.Scheme+"://"+u.Host, own) {
			return "Referer " + trimHeader(ref)
		}
	}
	return ""
}

func trimHeader(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
