package plot

import (
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

func TestLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "loss.png")
	red := color.RGBA{0xff, 0, 0, 0xff}
	base := color.RGBA{0, 0, 0xff, 0xff}
	c := Chart{
		Title: "loss",
		Series: []Series{
			{Name: "train", X: []float64{0, 10}, Y: []float64{5, 5}, Color: red},
			{Name: "gap", X: []float64{0, 5, 10}, Y: []float64{1, nan(), 9}},
		},
		HLines: []HLine{{Name: "unigram", Y: 3, Color: base}},
		Width:  400, Height: 300,
	}
	if err := c.WritePNG(path); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 400 || b.Dy() != 300 {
		t.Fatalf("size %v, want 400×300", b)
	}
	fr := c.frame()
	at := func(x, y float64) color.RGBA {
		px, py := fr.px(x, y)
		return color.RGBAModel.Convert(img.At(px, py)).(color.RGBA)
	}
	// The flat red series at y=5 runs across the middle; the baseline is
	// dashed, so look for it along a stretch.
	for _, x := range []float64{1, 4.5, 8} {
		if got := at(x, 5); got != red {
			t.Errorf("pixel of the train line at x=%v is %v, want %v", x, got, red)
		}
	}
	found := false
	for x := 0.0; x < 10; x += 0.05 {
		found = found || at(x, 3) == base
	}
	if !found {
		t.Error("no pixel of the baseline at y=3")
	}
	// The gap series breaks at its NaN point: nothing drawn half-way
	// between x=0 and x=5 on the line from (0,1) to (10,9).
	if got := at(2.5, 3); got == palette[0] {
		t.Errorf("a line was drawn across a NaN point")
	}
	// Tick labels are drawn left of the plotting area.
	ink := 0
	for x := range marginLeft {
		for y := fr.area.Min.Y; y < fr.area.Max.Y; y++ {
			if color.RGBAModel.Convert(img.At(x, y)).(color.RGBA) != background {
				ink++
			}
		}
	}
	if ink == 0 {
		t.Error("no tick labels")
	}
	if err := Lines(filepath.Join(t.TempDir(), "missing", "x.png"), "t", nil); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}

func TestTicks(t *testing.T) {
	got := ticks(0, 1, 5)
	if len(got) < 4 || got[0] != 0 || got[len(got)-1] < 0.99 {
		t.Errorf("ticks(0, 1) = %v", got)
	}
	if got := ticks(1, 1, 5); got != nil {
		t.Errorf("ticks of an empty range: %v", got)
	}
}

func nan() float64 { var z float64; return z / z }
