package chart

import (
	"os"
	"testing"
)

func TestLook(t *testing.T) {
	for name, f := range map[string]*Figure{
		"leak": leakAlert().Figure(paris), "hot": hotAlert().Figure(paris), "idle": idleAlert().Figure(paris),
		"lost": lostAlert().Figure(paris), "resolved": resolvedLeak().Figure(paris), "history": fourGPUs().Figure(paris),
		"day": busyDay().Figure(paris),
	} {
		b, err := f.PNG()
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile("/tmp/"+name+".png", b, 0o644)
	}
}
