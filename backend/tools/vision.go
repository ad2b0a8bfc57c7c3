package tools

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	"image/draw"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/image/bmp"
	xdraw "golang.org/x/image/draw"
	"golang.org/x/image/webp"
)

// The familiar agent's vision_analyze: the model looks at an image (a
// local file, an http(s) URL or a data: URL) through a model that can see
// (auxiliary.vision, else the main model), and reads what that model
// answers. The gateway asks the same of each photo a person sends, so the
// agent knows what it shows before it answers.

// VisionAnalyzeTool is the tool's name; its toolset is vision.
const VisionAnalyzeTool = "vision_analyze"

// Vision is how the vision tools reach a model that can see (the stack
// wires it from auxiliary.vision and the main model).
type Vision struct {
	// Unavailable says why no model can look at an image here (the main
	// model is offline, and auxiliary.vision names none).
	Unavailable string
	// Ask puts prompt and one image (a data: URL) to the vision model and
	// returns its answer.
	Ask func(ctx context.Context, prompt, dataURL string) (string, error)
	// DownloadTimeout bounds an image's download (0: 30 s).
	DownloadTimeout time.Duration
}

// Problem says why vision_analyze is not offered ("" when it is).
func (v Vision) Problem() string {
	switch {
	case v.Unavailable != "":
		return v.Unavailable
	case v.Ask == nil:
		return "vision_analyze needs a model that can see images: auxiliary.vision (its provider and model, or a base_url), or a main model from an API"
	}
	return ""
}

// Bounds of an image, as the familiar vision tools have them.
const (
	maxImageDownload = 50 << 20 // bytes an image may have, read or downloaded
	maxImagePayload  = 20 << 20 // a data: URL no provider takes more of
	resizeTarget     = 5 << 20  // a data: URL's size after a resize
)

func visionAnalyzeTool() Tool {
	return Tool{Name: VisionAnalyzeTool, Toolset: "vision", run: func(ctx context.Context, c *Call) any { return c.visionAnalyze(ctx) },
		Description: "Load an image into the conversation so you can see it. Call it " +
			"any time the user references an image — then answer from what " +
			"you see.",
		Parameters: `{"type":"object","properties":{` +
			`"image_url":{"type":"string","description":"Image URL (http/https), local file path, or data: URL to load."},` +
			`"question":{"type":"string","description":"Your question or request about the image."},` +
			`"region":{"type":"array","items":{"type":"integer"},"minItems":4,"maxItems":4,"description":"Optional [x1, y1, x2, y2] crop in ORIGINAL-image pixel coordinates, applied before any downscaling — the crop keeps full resolution. Load the full image first, then re-call with a region to zoom into small text or fine detail."}` +
			`},"required":["image_url","question"]}`}
}

func (c *Call) visionAnalyze(ctx context.Context) any {
	source, _ := c.str("image_url")
	question, _ := c.str("question")
	if strings.TrimSpace(source) == "" {
		return map[string]any{"success": false, "error": "image_url is required"}
	}
	var region []int
	if raw, ok := c.Args["region"]; ok && raw != nil {
		l, ok := list(raw)
		if !ok || len(l) != 4 {
			return map[string]any{"success": false, "error": "region must be [x1, y1, x2, y2]: four whole numbers, in the original image's pixels"}
		}
		for i := range l {
			n := intValue(l[i], -1)
			if n < 0 {
				return map[string]any{"success": false, "error": "region must be [x1, y1, x2, y2]: four whole numbers of 0 or more, in the original image's pixels"}
			}
			region = append(region, n)
		}
	}
	prompt := "Fully describe and explain everything about this image, then answer the following question:\n\n" + question
	analysis, note, err := c.Settings.AnalyzeImage(ctx, c.Dir, source, prompt, region)
	if err != nil {
		return map[string]any{"success": false, "error": "Error analyzing image: " + err.Error(),
			"analysis": "There was a problem with the request and the image could not be analyzed. Error: " + err.Error()}
	}
	out := map[string]any{"success": true, "analysis": analysis}
	if note != "" {
		out["analysis"], out["scale_note"] = "["+note+"] "+analysis, note
	}
	return out
}

// AnalyzeImage puts prompt and the image source names (a local file, taken
// from dir when relative; an http(s) URL; a data: URL), cropped to region
// when one is given ([x1 y1 x2 y2]), to the vision model. note says how
// the image was cropped or scaled down on the way, for coordinates.
func (s Settings) AnalyzeImage(ctx context.Context, dir, source, prompt string, region []int) (analysis, note string, err error) {
	if p := s.Vision.Problem(); p != "" {
		return "", "", errors.New(p)
	}
	data, err := s.loadImage(ctx, dir, source)
	if err != nil {
		return "", "", err
	}
	img, err := prepareImage(data, region)
	if err != nil {
		return "", "", err
	}
	dataURL := img.dataURL()
	if len(dataURL) > maxImagePayload {
		if err := img.shrink(resizeTarget); err != nil {
			return "", "", err
		}
		dataURL = img.dataURL()
		if len(dataURL) > maxImagePayload {
			return "", "", fmt.Errorf("the image is too large for a vision model: %.1f MB as sent, even after scaling it down (at most %d MB)", float64(len(dataURL))/(1<<20), maxImagePayload>>20)
		}
	}
	analysis, err = s.Vision.Ask(ctx, prompt, dataURL)
	if err != nil && sizeRefused(err) && len(dataURL) > resizeTarget {
		// The provider took it as too large: scaled down once, and asked
		// again, as the familiar tool does.
		if serr := img.shrink(resizeTarget); serr == nil {
			dataURL = img.dataURL()
			analysis, err = s.Vision.Ask(ctx, prompt, dataURL)
		}
	}
	if err == nil && strings.TrimSpace(analysis) == "" {
		analysis, err = s.Vision.Ask(ctx, prompt, dataURL) // an empty answer is asked again once
	}
	if err != nil {
		return "", "", err
	}
	if strings.TrimSpace(analysis) == "" {
		analysis = "There was a problem with the request and the image could not be analyzed."
	}
	return strings.TrimSpace(analysis), img.note(), nil
}

// sizeRefused says a provider refused a request for its size, in the
// words providers use.
func sizeRefused(err error) bool {
	e := strings.ToLower(err.Error())
	return slices.ContainsFunc([]string{"too large", "payload", "413", "content_too_large", "request_too_large", "exceeds", "size limit"},
		func(h string) bool { return strings.Contains(e, h) })
}

// loadImage reads the image source names: at most maxImageDownload bytes.
func (s Settings) loadImage(ctx context.Context, dir, source string) ([]byte, error) {
	source = strings.TrimSpace(source)
	lower := strings.ToLower(source)
	switch {
	case strings.HasPrefix(lower, "data:"):
		meta, payload, ok := strings.Cut(source[len("data:"):], ",")
		if !ok || !strings.HasSuffix(strings.ToLower(meta), ";base64") {
			return nil, errors.New("a data: URL must be base64 (data:image/png;base64,...)")
		}
		if base64.StdEncoding.DecodedLen(len(payload)) > maxImageDownload {
			return nil, fmt.Errorf("the image is larger than %d MB", maxImageDownload>>20)
		}
		b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(payload))
		if err != nil {
			return nil, fmt.Errorf("the data: URL is not valid base64: %v", err)
		}
		return b, nil
	case strings.HasPrefix(lower, "http://") || strings.HasPrefix(lower, "https://"):
		return s.downloadImage(ctx, source)
	}
	path := strings.TrimPrefix(source, "file://")
	path = (&Call{Dir: dir}).resolve(path)
	if s.secret(path) {
		return nil, fmt.Errorf("cannot read %s: it holds the profile's keys and tokens, which are not the model's to read", path)
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("no such file: %s (give an absolute path, an http(s) URL or a data: URL)", path)
	case err != nil:
		return nil, err
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file", path)
	case fi.Size() > maxImageDownload:
		return nil, fmt.Errorf("%s is %.1f MB: images of at most %d MB are read", path, float64(fi.Size())/(1<<20), maxImageDownload>>20)
	}
	return os.ReadFile(path)
}

// downloadImage fetches an image from the web, refusing what web_extract
// refuses (a private or internal address, at every connection and redirect
// too, unless security.allow_private_urls; a URL holding a key).
func (s Settings) downloadImage(ctx context.Context, u string) ([]byte, error) {
	if why := s.Web.carriesSecret(u); why != "" {
		return nil, errors.New(why)
	}
	if why := s.Web.unsafe(ctx, u); why != "" {
		return nil, errors.New(why)
	}
	timeout := s.Vision.DownloadTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := s.Web.guardedClient()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "image/*,*/*;q=0.8")
	req.Header.Set("User-Agent", "Atrium (vision_analyze)")
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("the image did not download within %v", timeout)
		}
		return nil, fmt.Errorf("the image could not be downloaded: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("the image could not be downloaded: %s answered HTTP %d", hostOf(u), resp.StatusCode)
	}
	if resp.ContentLength > maxImageDownload {
		return nil, fmt.Errorf("the image is %.1f MB: images of at most %d MB are downloaded", float64(resp.ContentLength)/(1<<20), maxImageDownload>>20)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxImageDownload+1))
	if err != nil {
		return nil, fmt.Errorf("the image could not be downloaded: %v", err)
	}
	if len(b) > maxImageDownload {
		return nil, fmt.Errorf("the image is larger than %d MB: images of at most %d MB are downloaded", maxImageDownload>>20, maxImageDownload>>20)
	}
	return b, nil
}

// guardedClient is an HTTP client whose every connection (a redirect's
// too, and a name that resolves differently the second time) is refused
// when it reaches a private or internal address, unless
// AllowPrivateURLs; through a proxy the proxy resolves names, and the
// check made before asking is what holds.
func (w Web) guardedClient() *http.Client {
	dialer := &net.Dialer{Timeout: 15 * time.Second}
	if !w.proxied() {
		dialer.Control = func(_, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return err
			}
			a, err := netip.ParseAddr(host)
			if err != nil {
				return err
			}
			if blockedAddr(a.Unmap(), w.AllowPrivateURLs) {
				return errors.New("Blocked: URL targets a private or internal network address")
			}
			return nil
		}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = dialer.DialContext
	return &http.Client{Transport: tr, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 5 {
			return errors.New("too many redirects")
		}
		if why := w.carriesSecret(req.URL.String()); why != "" {
			return errors.New(why)
		}
		if p := req.URL.Scheme; p != "http" && p != "https" {
			return errors.New("a redirect to " + p + ": is not followed")
		}
		return nil
	}}
}

// preparedImage is an image as it is sent: its bytes and type, and how it
// was cropped or scaled on the way.
type preparedImage struct {
	data       []byte
	mime       string
	decoded    image.Image // nil until needed
	origW      int         // the size before a downscale (0: none)
	origH      int
	crop       *image.Point // the crop's origin in the original image
	scaledW    int
	scaledH    int
	alphaOrPNG bool
}

// prepareImage checks that data is an image a vision model takes (PNG,
// JPEG, GIF, WebP; a BMP is sent as PNG) and crops it to region.
func prepareImage(data []byte, region []int) (*preparedImage, error) {
	mt := http.DetectContentType(data)
	img := &preparedImage{data: data, mime: mt}
	switch mt {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
	case "image/bmp":
		d, err := bmp.Decode(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("the BMP image could not be read: %v", err)
		}
		img.decoded = d
		if err := img.encodePNG(d); err != nil {
			return nil, err
		}
	default:
		if bytes.Contains(data[:min(len(data), 512)], []byte("<svg")) {
			return nil, errors.New("an SVG image is not one a vision model takes: convert it to PNG first")
		}
		kind, _, _ := mime.ParseMediaType(mt)
		return nil, fmt.Errorf("this is not an image (it reads as %s): vision_analyze takes PNG, JPEG, GIF, WebP and BMP", kind)
	}
	img.alphaOrPNG = img.mime == "image/png"
	if region != nil {
		if err := img.cropTo(region); err != nil {
			return nil, err
		}
	}
	return img, nil
}

func (p *preparedImage) dataURL() string {
	return "data:" + p.mime + ";base64," + base64.StdEncoding.EncodeToString(p.data)
}

func (p *preparedImage) image() (image.Image, error) {
	if p.decoded != nil {
		return p.decoded, nil
	}
	var (
		d   image.Image
		err error
	)
	switch p.mime {
	case "image/png":
		d, err = png.Decode(bytes.NewReader(p.data))
	case "image/jpeg":
		d, err = jpeg.Decode(bytes.NewReader(p.data))
	case "image/gif":
		d, err = gif.Decode(bytes.NewReader(p.data))
	case "image/webp":
		d, err = webp.Decode(bytes.NewReader(p.data))
	default:
		err = errors.New("unknown image type " + p.mime)
	}
	if err != nil {
		return nil, fmt.Errorf("the image could not be decoded: %v", err)
	}
	p.decoded = d
	return d, nil
}

func (p *preparedImage) encodePNG(img image.Image) error {
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return err
	}
	p.data, p.mime, p.decoded = buf.Bytes(), "image/png", img
	return nil
}

// cropTo crops the image to region, [x1 y1 x2 y2] in its own pixels
// (clipped to its bounds), at full resolution.
func (p *preparedImage) cropTo(region []int) error {
	src, err := p.image()
	if err != nil {
		return err
	}
	b := src.Bounds()
	r := image.Rect(b.Min.X+region[0], b.Min.Y+region[1], b.Min.X+region[2], b.Min.Y+region[3]).Intersect(b)
	if region[2] <= region[0] || region[3] <= region[1] || r.Empty() {
		return fmt.Errorf("region [%d, %d, %d, %d] holds no pixels of the %dx%d image: x2 must be above x1, y2 above y1, within the image",
			region[0], region[1], region[2], region[3], b.Dx(), b.Dy())
	}
	dst := image.NewRGBA(image.Rect(0, 0, r.Dx(), r.Dy()))
	draw.Draw(dst, dst.Bounds(), src, r.Min, draw.Src)
	p.crop = &image.Point{X: r.Min.X - b.Min.X, Y: r.Min.Y - b.Min.Y}
	return p.encodePNG(dst)
}

// shrink scales the image down until its data: URL is at most target
// bytes: halved up to four times (at least 64 pixels a side), a JPEG
// also at lower qualities; a PNG stays a PNG.
func (p *preparedImage) shrink(target int) error {
	src, err := p.image()
	if err != nil {
		return err
	}
	b := src.Bounds()
	w, h := b.Dx(), b.Dy()
	cur := src
	for step := 0; step < 5; step++ {
		if step > 0 {
			nw, nh := max(w/2, 64), max(h/2, 64)
			if nw == w && nh == h {
				break
			}
			w, h = nw, nh
			dst := image.NewRGBA(image.Rect(0, 0, w, h))
			xdraw.CatmullRom.Scale(dst, dst.Bounds(), src, b, xdraw.Src, nil)
			cur = dst
		}
		qualities := []int{85, 70, 50}
		if p.alphaOrPNG {
			qualities = []int{0}
		}
		for _, q := range qualities {
			var buf bytes.Buffer
			mt := "image/jpeg"
			if q == 0 {
				mt = "image/png"
				err = png.Encode(&buf, cur)
			} else {
				err = jpeg.Encode(&buf, cur, &jpeg.Options{Quality: q})
			}
			if err != nil {
				return err
			}
			if base64.StdEncoding.EncodedLen(buf.Len())+len("data:;base64,")+len(mt) <= target {
				p.record(b.Dx(), b.Dy(), w, h)
				p.data, p.mime = buf.Bytes(), mt
				return nil
			}
			p.data, p.mime = buf.Bytes(), mt // the best so far
		}
	}
	p.record(b.Dx(), b.Dy(), w, h)
	return nil
}

func (p *preparedImage) record(ow, oh, w, h int) {
	if ow != w || oh != h {
		p.origW, p.origH, p.scaledW, p.scaledH = ow, oh, w, h
	}
}

// note says how to map coordinates back to the original image, as the
// familiar tool says it ("" when the image went as it was).
func (p *preparedImage) note() string {
	var parts []string
	if p.origW > 0 {
		fx, fy := float64(p.origW)/float64(p.scaledW), float64(p.origH)/float64(p.scaledH)
		axes := fmt.Sprintf("any coordinates you report by %.2f", fx)
		if fmt.Sprintf("%.2f", fx) != fmt.Sprintf("%.2f", fy) {
			axes = fmt.Sprintf("any x coordinates you report by %.2f and any y coordinates by %.2f", fx, fy)
		}
		parts = append(parts, fmt.Sprintf("Image downscaled from %dx%d to %dx%d for vision; multiply %s to map back to the original image.",
			p.origW, p.origH, p.scaledW, p.scaledH, axes))
	}
	if p.crop != nil {
		parts = append(parts, fmt.Sprintf("Analysis was performed on a cropped region of the original image starting at offset (%d, %d); "+
			"coordinates are relative to that crop origin — add the offset to map back to the full image.", p.crop.X, p.crop.Y))
	}
	return strings.Join(parts, " ")
}
