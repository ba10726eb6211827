package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"
)

// files are the page's files: what the browser loads.
//
//go:embed assets
var files embed.FS

// asset is one embedded file, read and compressed the first time it is
// asked for: an agent whose page nobody opens never copies the files nor
// runs a compressor for them.
type asset struct {
	name        string // in files
	contentType string
	once        sync.Once
	body        []byte
	gzipped     []byte // nil when compressing does not pay
	etag        string
	err         error
}

// load reads and compresses the file, once.
func (f *asset) load() error {
	f.once.Do(func() {
		body, err := files.ReadFile(f.name)
		if err != nil {
			f.err = fmt.Errorf("read the page's embedded file %s: %w", f.name, err)
			return
		}
		sum := sha256.Sum256(body)
		f.body, f.etag = body, `"`+hex.EncodeToString(sum[:12])+`"`
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		zw.Write(body)
		if err := zw.Close(); err != nil {
			f.err = fmt.Errorf("compress the page's embedded file %s: %w", f.name, err)
			return
		}
		if b.Len() < len(body) {
			f.gzipped = b.Bytes()
		}
	})
	return f.err
}

// assets are the embedded files by their path under assets/.
type assets struct {
	byPath map[string]*asset
}

// loadAssets lists the embedded files; each is read when first sent.
func loadAssets() (*assets, error) {
	a := &assets{byPath: map[string]*asset{}}
	err := fs.WalkDir(files, "assets", func(name string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		a.byPath[strings.TrimPrefix(name, "assets/")] = &asset{name: name, contentType: contentType(name)}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the page's embedded files: %w", err)
	}
	return a, nil
}

// contentType is a file's media type by its extension, UTF-8 for text.
func contentType(name string) string {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	case "":
		return "text/plain; charset=utf-8" // LICENSE
	}
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return "application/octet-stream"
}

// serve answers GET /assets/{file...}.
func (a *assets) serve(w http.ResponseWriter, r *http.Request) {
	a.send(w, r, r.PathValue("file"))
}

// serveFile answers with one file whatever the path (the page at /).
func (a *assets) serveFile(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { a.send(w, r, name) }
}

// send writes the file at name: 304 when the browser has it, gzipped when
// it takes gzip. Browsers check again on each load (no-cache): the names
// do not change with the contents, and an upgrade must show at once.
func (a *assets) send(w http.ResponseWriter, r *http.Request, name string) {
	f, ok := a.byPath[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if err := f.load(); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("ETag", f.etag)
	h.Set("Cache-Control", "no-cache")
	h.Set("Vary", "Accept-Encoding")
	if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, f.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", f.contentType)
	body := f.body
	if f.gzipped != nil && acceptsGzip(r) {
		body = f.gzipped
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// acceptsGzip reports whether the request's Accept-Encoding takes gzip.
func acceptsGzip(r *http.Request) bool {
	for part := range strings.SplitSeq(r.Header.Get("Accept-Encoding"), ",") {
		coding, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(coding), "gzip") && strings.ReplaceAll(strings.TrimSpace(q), " ", "") != "q=0" {
			return true
		}
	}
	return false
}

// Size is what a first load of the page transfers, compressed as a
// browser asks for it: the page and every file it loads.
func (s *Server) Size() int {
	n := 0
	for _, f := range s.assets.byPath {
		if f.contentType == "text/plain; charset=utf-8" || f.load() != nil {
			continue // the license is not loaded
		}
		if f.gzipped != nil {
			n += len(f.gzipped)
		} else {
			n += len(f.body)
		}
	}
	return n
}
