// Package plot draws line charts as PNG files with the standard library
// alone: axes with numbered ticks, one polyline per series, horizontal
// reference lines and a legend, lettered in a built-in 3×5 pixel font
// (upper case, digits and a little punctuation).
//
// Charts are values; drawing one has no side effects but the file it
// writes, which appears whole or not at all.
package plot

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"strconv"
	"strings"

	"github.com/verisim/verisim/internal/atomicfile"
)

// Series is one line: Y[i] at X[i]. Points with a non-finite coordinate
// are skipped, breaking the line there.
type Series struct {
	Name  string
	X, Y  []float64
	Color color.RGBA // zero: the next colour of the default palette
}

// HLine is a horizontal reference line across the whole chart, such as a
// baseline.
type HLine struct {
	Name  string
	Y     float64
	Color color.RGBA // zero: grey
}

// Chart is a line chart.
type Chart struct {
	Title          string
	XLabel, YLabel string
	Series         []Series
	HLines         []HLine
	// Width and Height in pixels; zero means 800×480.
	Width, Height int
}

// Palette is the default series colours, in order.
var palette = [...]color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, // blue
	{0xd6, 0x27, 0x28, 0xff}, // red
	{0x2c, 0xa0, 0x2c, 0xff}, // green
	{0xff, 0x7f, 0x0e, 0xff}, // orange
	{0x94, 0x67, 0xbd, 0xff}, // purple
}

var (
	background = color.RGBA{0xff, 0xff, 0xff, 0xff}
	ink        = color.RGBA{0x20, 0x20, 0x20, 0xff}
	grid       = color.RGBA{0xe4, 0xe4, 0xe4, 0xff}
	grey       = color.RGBA{0x80, 0x80, 0x80, 0xff}
)

// Lines writes a chart of series, with optional reference lines, to path
// as a PNG.
func Lines(path, title string, series []Series, hlines ...HLine) error {
	return Chart{Title: title, Series: series, HLines: hlines}.WritePNG(path)
}

// WritePNG draws c and writes it to path atomically.
func (c Chart) WritePNG(path string) error {
	var b bytes.Buffer
	if err := png.Encode(&b, c.Image()); err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	if err := atomicfile.Write(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return nil
}

// Margins around the plotting area, in pixels.
const (
	marginLeft   = 70
	marginRight  = 20
	marginTop    = 34
	marginBottom = 44
	scale        = 2 // font pixels per glyph pixel
)

// frame maps data coordinates to pixels.
type frame struct {
	area                   image.Rectangle
	xmin, xmax, ymin, ymax float64
}

func (f frame) px(x, y float64) (int, int) {
	w, h := float64(f.area.Dx()-1), float64(f.area.Dy()-1)
	return f.area.Min.X + int(math.Round((x-f.xmin)/(f.xmax-f.xmin)*w)),
		f.area.Max.Y - 1 - int(math.Round((y-f.ymin)/(f.ymax-f.ymin)*h))
}

func (c Chart) size() (int, int) {
	if c.Width == 0 || c.Height == 0 {
		return 800, 480
	}
	return c.Width, c.Height
}

// frame computes the plotting area and the data ranges, padded so lines do
// not sit on the axes.
func (c Chart) frame() frame {
	w, h := c.size()
	f := frame{
		area: image.Rect(marginLeft, marginTop, w-marginRight, h-marginBottom),
		xmin: math.Inf(1), xmax: math.Inf(-1), ymin: math.Inf(1), ymax: math.Inf(-1),
	}
	for _, s := range c.Series {
		for i := range min(len(s.X), len(s.Y)) {
			if finite(s.X[i]) && finite(s.Y[i]) {
				f.xmin, f.xmax = min(f.xmin, s.X[i]), max(f.xmax, s.X[i])
				f.ymin, f.ymax = min(f.ymin, s.Y[i]), max(f.ymax, s.Y[i])
			}
		}
	}
	for _, l := range c.HLines {
		if finite(l.Y) {
			f.ymin, f.ymax = min(f.ymin, l.Y), max(f.ymax, l.Y)
		}
	}
	if f.xmin > f.xmax {
		f.xmin, f.xmax = 0, 1
	}
	if f.ymin > f.ymax {
		f.ymin, f.ymax = 0, 1
	}
	if f.xmin == f.xmax {
		f.xmin, f.xmax = f.xmin-0.5, f.xmax+0.5
	}
	if f.ymin == f.ymax {
		f.ymin, f.ymax = f.ymin-0.5, f.ymax+0.5
	}
	pad := (f.ymax - f.ymin) * 0.05
	f.ymin, f.ymax = f.ymin-pad, f.ymax+pad
	return f
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// Image draws the chart.
func (c Chart) Image() *image.RGBA {
	w, h := c.size()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), image.NewUniform(background), image.Point{}, draw.Src)
	f := c.frame()
	clip := img.SubImage(f.area).(*image.RGBA)

	// Grid and tick labels.
	for _, y := range ticks(f.ymin, f.ymax, 6) {
		_, py := f.px(f.xmin, y)
		line(clip, f.area.Min.X, py, f.area.Max.X-1, py, grid, 1)
		label := formatTick(y)
		text(img, f.area.Min.X-6-textWidth(label), py-5*scale/2, label, ink)
	}
	for _, x := range ticks(f.xmin, f.xmax, 8) {
		px, _ := f.px(x, f.ymin)
		line(clip, px, f.area.Min.Y, px, f.area.Max.Y-1, grid, 1)
		label := formatTick(x)
		text(img, px-textWidth(label)/2, f.area.Max.Y+6, label, ink)
	}
	// Axes.
	line(img, f.area.Min.X-1, f.area.Min.Y, f.area.Min.X-1, f.area.Max.Y, ink, 1)
	line(img, f.area.Min.X-1, f.area.Max.Y, f.area.Max.X, f.area.Max.Y, ink, 1)

	type key struct {
		name string
		col  color.RGBA
	}
	var legend []key
	for _, l := range c.HLines {
		col := l.Color
		if col == (color.RGBA{}) {
			col = grey
		}
		if finite(l.Y) {
			_, py := f.px(f.xmin, l.Y)
			dashed(clip, f.area.Min.X, f.area.Max.X-1, py, col)
		}
		legend = append(legend, key{l.Name, col})
	}
	next := 0
	for _, s := range c.Series {
		col := s.Color
		if col == (color.RGBA{}) {
			col = palette[next%len(palette)]
			next++
		}
		havePrev := false
		var x0, y0 int
		for i := range min(len(s.X), len(s.Y)) {
			if !finite(s.X[i]) || !finite(s.Y[i]) {
				havePrev = false
				continue
			}
			x1, y1 := f.px(s.X[i], s.Y[i])
			if havePrev {
				line(clip, x0, y0, x1, y1, col, 2)
			} else {
				line(clip, x1, y1, x1, y1, col, 2)
			}
			x0, y0, havePrev = x1, y1, true
		}
		legend = append(legend, key{s.Name, col})
	}

	text(img, marginLeft, (marginTop-5*scale)/2, c.Title, ink)
	if c.XLabel != "" {
		text(img, f.area.Max.X-textWidth(c.XLabel), h-5*scale-4, c.XLabel, ink)
	}
	if c.YLabel != "" {
		text(img, 4, (marginTop-5*scale)/2, c.YLabel, ink)
	}
	// Legend, top right inside the plotting area.
	y := f.area.Min.Y + 8
	for _, k := range legend {
		if k.name == "" {
			continue
		}
		tw := textWidth(k.name)
		x := f.area.Max.X - 8 - tw - 26
		draw.Draw(img, image.Rect(x-4, y-3, f.area.Max.X-4, y+5*scale+3), image.NewUniform(background), image.Point{}, draw.Src)
		line(img, x, y+5*scale/2, x+18, y+5*scale/2, k.col, 3)
		text(img, x+26, y, k.name, ink)
		y += 5*scale + 8
	}
	return img
}

// line draws from (x0, y0) to (x1, y1) with Bresenham's algorithm, each
// point a square of side width.
func line(img *image.RGBA, x0, y0, x1, y1 int, col color.RGBA, width int) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for {
		for i := range width {
			for j := range width {
				p := image.Pt(x0+i-width/2, y0+j-width/2)
				if p.In(img.Rect) {
					img.SetRGBA(p.X, p.Y, col)
				}
			}
		}
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

func dashed(img *image.RGBA, x0, x1, y int, col color.RGBA) {
	for x := x0; x <= x1; x += 10 {
		line(img, x, y, min(x+5, x1), y, col, 2)
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func sign(v int) int {
	switch {
	case v < 0:
		return -1
	case v > 0:
		return 1
	}
	return 0
}

// ticks returns about n round values between lo and hi.
func ticks(lo, hi float64, n int) []float64 {
	span := hi - lo
	if !(span > 0) || !finite(span) {
		return nil
	}
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	var step float64
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		step = m * mag
		if step >= raw {
			break
		}
	}
	var out []float64
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		out = append(out, v)
	}
	return out
}

func formatTick(v float64) string {
	s := strconv.FormatFloat(v, 'g', 4, 64)
	return strings.ToUpper(s)
}
