package desktop

import (
	"html/template"
	"net/http"
	"strings"

	"atrium/backend/config"
)

// StartErrorTitle is the title of the window that says why a profile could
// not be opened.
const StartErrorTitle = "Atrium: the profile could not be opened"

// startActions are what the page's buttons ask of the window.
var startActions = map[string]bool{"retry": true, "quit": true, "config": true, "folder": true}

// startPage serves the page of that window: what failed, in the words of
// the error, what to do about it, and the buttons (each a POST to
// /act/NAME, handed to act). It needs no script of Wails's: a person who
// started Atrium from the desktop's menu has no terminal where an error
// would show, so this page is all they see.
type startPage struct {
	home config.Home
	err  error
	act  func(name string)
}

var startTemplate = template.Must(template.New("start").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>
body{font:15px/1.45 system-ui,sans-serif;margin:0;padding:28px 32px;background:#fafafa;color:#1d1d1f}
h1{font-size:20px;margin:0 0 6px}
.muted{color:#5f6368;font-size:13px}
pre{white-space:pre-wrap;word-break:break-word;background:#fff;border:1px solid #e0b4b4;border-left:4px solid #c62828;
 padding:10px 12px;border-radius:6px;font-size:13px;max-height:180px;overflow:auto}
.actions{display:flex;gap:8px;margin-top:18px;flex-wrap:wrap}
button{font:inherit;padding:7px 14px;border-radius:6px;border:1px solid #c4c7cc;background:#fff;cursor:pointer}
button.primary{background:#2b5fd9;border-color:#2b5fd9;color:#fff}
code{font-size:13px}
</style></head>
<body>
<h1>Atrium could not open the profile</h1>
<p class="muted">{{.Home}}</p>
<pre role="alert" data-testid="start-error">{{.Error}}</pre>
{{if .Config}}<p>Its <code>config.yaml</code> does not load. Fix the line the message names and save the file, then try again. Nothing was changed.</p>
{{else}}<p>Nothing was changed. When what the message names is fixed, try again; <code>atrium</code> in a terminal says the same.</p>{{end}}
<div class="actions">
<button class="primary" data-act="retry" autofocus>Try again</button>
{{if .Config}}<button data-act="config">Open config.yaml</button>{{end}}
<button data-act="folder">Show the folder</button>
<button data-act="quit">Quit</button>
</div>
<script>
for (const b of document.querySelectorAll('button[data-act]')) {
  b.addEventListener('click', () => fetch('/act/' + b.dataset.act, { method: 'POST' }));
}
</script>
</body></html>
`))

func (p startPage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && (r.URL.Path == "/" || r.URL.Path == "/index.html"):
		msg := p.err.Error()
		if len(msg) > 4000 {
			msg = msg[:4000] + "…"
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = startTemplate.Execute(w, map[string]any{"Title": StartErrorTitle, "Home": p.home.Dir, "Error": msg,
			"Config": strings.Contains(msg, p.home.ConfigPath())})
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/act/") && startActions[strings.TrimPrefix(r.URL.Path, "/act/")]:
		p.act(strings.TrimPrefix(r.URL.Path, "/act/"))
		w.WriteHeader(http.StatusNoContent)
	default:
		http.NotFound(w, r)
	}
}
