package web

import (
	"net/http/httptest"
	"testing"
)

// TestAssetsReadWhenAsked: starting the page reads and compresses none
// of its files (an agent whose page nobody opens pays nothing for
// them); a request reads the file it asks for, and only that one.
func TestAssetsReadWhenAsked(t *testing.T) {
	a, err := loadAssets()
	if err != nil {
		t.Fatal(err)
	}
	if len(a.byPath) < 4 {
		t.Fatalf("got %d files, want the page's (index.html, app.js, app.css, …)", len(a.byPath))
	}
	for name, f := range a.byPath {
		if f.body != nil || f.gzipped != nil {
			t.Errorf("%s is read before anyone asked for it", name)
		}
	}
	w := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/assets/app.css", nil)
	r.Header.Set("Accept-Encoding", "gzip")
	a.send(w, r, "app.css")
	if w.Code != 200 || w.Header().Get("Content-Encoding") != "gzip" || w.Header().Get("ETag") == "" {
		t.Fatalf("GET app.css: %d %v", w.Code, w.Header())
	}
	for name, f := range a.byPath {
		if read := f.body != nil; read != (name == "app.css") {
			t.Errorf("after GET app.css: %s read is %v", name, read)
		}
	}
}
