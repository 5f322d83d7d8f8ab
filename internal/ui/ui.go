// Package ui is echo_mq's built-in dashboard: a few static files (HTML, CSS
// and plain ES modules, no build step) embedded in the binary and served
// under /ui/. The page calls the same JSON API as any client, with the API
// key the person types in, so it can do nothing that key may not.
//
// Its one library, the uPlot charts, is a copy of the npm package's files
// under static/third_party/, pinned by third_party/package-lock.json and
// checked against it by a test. The folder is not named vendor: Go's module
// zips leave out files under a vendor/ folder's subfolders, so a binary
// built from the module proxy would lack them.
package ui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

// static holds the dashboard's files.
//
//go:embed static
var static embed.FS

// Files are the dashboard's files, rooted at the directory the page is
// served from (index.html, app.js, style.css, ...).
var Files = mustSub(static, "static")

func mustSub(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(err) // only a wrong directory name in this file
	}
	return sub
}

// ContentSecurityPolicy lets the page load nothing but its own files and
// talk to nothing but its own origin: no inline script or style, no frames.
const ContentSecurityPolicy = "default-src 'self'; connect-src 'self'; img-src 'self' data:; " +
	"style-src 'self'; script-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// contentTypes are the types of the files the dashboard ships; a file of
// another kind is not served.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
}

// Handler serves the dashboard's files by the request's path with any
// "/ui" prefix already stripped: "/" is index.html, "/app.js" is app.js.
// A path that names no file is answered by notFound (http.NotFound when
// nil), so that the caller's 404 looks like the rest of its API.
//
// Every answer carries the strict headers: the CSP above, X-Frame-Options,
// nosniff, and Cache-Control no-cache so that a browser revalidates (by
// ETag) and an upgraded binary shows its new dashboard at once.
func Handler(notFound http.Handler) http.Handler {
	if notFound == nil {
		notFound = http.NotFoundHandler()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Frame-Options", "DENY") // frame-ancestors, for browsers without CSP 2
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		name := strings.TrimPrefix(r.URL.Path, "/")
		if name == "" {
			name = "index.html"
		}
		body, ctype, ok := file(name)
		if !ok {
			notFound.ServeHTTP(w, r)
			return
		}
		h.Set("Content-Type", ctype)
		h.Set("ETag", etag(body))
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(body))
	})
}

// file reads one dashboard file and its type; ok is false for a path that
// is not a clean name of a regular file of a known type.
func file(name string) (body []byte, ctype string, ok bool) {
	if !fs.ValidPath(name) || path.Clean(name) != name {
		return nil, "", false
	}
	ctype, ok = contentTypes[path.Ext(name)]
	if !ok {
		return nil, "", false
	}
	body, err := fs.ReadFile(Files, name)
	if err != nil {
		return nil, "", false
	}
	return body, ctype, true
}

// etag is a strong validator of a file's content.
func etag(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + hex.EncodeToString(sum[:8]) + `"`
}
