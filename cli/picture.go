package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/chart"
)

// writePictures writes a digest's pictures, one per host: the first to
// file (standard output when file is ""), the others beside it as
// FILE-HOST.png.
func writePictures(env *Env, days []*chart.Day, loc *time.Location, file string) error {
	if len(days) == 0 {
		return userErrf("digest: no GPU reported in the window: there is no picture to draw")
	}
	if file == "" && len(days) > 1 {
		return usageErrf("digest: the window has %d hosts, a picture each: give --out FILE (the others go to FILE-HOST.png)", len(days))
	}
	for i, d := range days {
		png, err := d.PNG(loc)
		if err != nil {
			return fmt.Errorf("digest: %w", err)
		}
		path := file
		if i > 0 {
			ext := filepath.Ext(file)
			path = strings.TrimSuffix(file, ext) + "-" + hostOf(d) + ext
		}
		if err := writePNG(env, png, path); err != nil {
			return err
		}
	}
	return nil
}

// hostOf is the host a day's picture is of, for a file name.
func hostOf(d *chart.Day) string {
	host := strings.TrimPrefix(d.Title, "GPU usage on ")
	return strings.Map(func(r rune) rune {
		if r == '/' || r == os.PathSeparator || r == ' ' {
			return '_'
		}
		return r
	}, host)
}

// writePNG writes a picture to path, or to standard output when path is
// "" and standard output is not a terminal.
func writePNG(env *Env, png []byte, path string) error {
	if path == "" {
		if f, ok := env.Stdout.(*os.File); ok {
			if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
				return usageErrf("digest: a PNG would go to the terminal: give --out FILE, or redirect the output")
			}
		}
		_, err := env.Stdout.Write(png)
		return err
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		return userErrf("digest: %v", err)
	}
	fmt.Fprintf(env.Stderr, "wrote %s\n", path)
	return nil
}
