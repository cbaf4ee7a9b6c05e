// Command image builds drainctl's container image without a Docker engine: the static
// binary and the CA bundle on an empty base, written as an OCI image layout in a tar file
// (podman load / skopeo copy oci-archive:FILE read it). The image reference is deploy/IMAGE,
// the one the manifests name.
//
//	go run . -binary ../../dist/drainctl -out ../../dist/drainctl-image.oci.tar
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func main() {
	binary := flag.String("binary", "", "the static drainctl binary (CGO_ENABLED=0)")
	out := flag.String("out", "drainctl-image.oci.tar", "the OCI archive to write")
	refFile := flag.String("ref", "../../deploy/IMAGE", "the file holding the image reference")
	cabundle := flag.String("ca", "/etc/ssl/certs/ca-certificates.crt", "CA bundle for TLS to Keystone and Nova")
	flag.Parse()
	if err := build(*binary, *out, *refFile, *cabundle); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func build(binary, out, refFile, cabundle string) error {
	ref, err := os.ReadFile(refFile)
	if err != nil {
		return err
	}
	bin, err := os.ReadFile(binary)
	if err != nil {
		return fmt.Errorf("the binary: %w (build it with CGO_ENABLED=0 go build -o %s .)", err, binary)
	}
	ca, err := os.ReadFile(cabundle)
	if err != nil {
		return err
	}
	layer, err := layerOf(map[string]fileEntry{
		"drainctl":                          {bin, 0o755},
		"etc/ssl/certs/ca-certificates.crt": {ca, 0o644},
		"etc/passwd":                        {[]byte("nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"), 0o644},
	})
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Config(img, v1.Config{Entrypoint: []string{"/drainctl"}, User: "65532:65532",
		Env:    []string{"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
		Labels: map[string]string{"org.opencontainers.image.source": "https://github.com/drainctl/drainctl"}})
	if err != nil {
		return err
	}
	img, err = mutate.CreatedAt(img, v1.Time{Time: time.Unix(0, 0)})
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "drainctl-image")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	name := strings.TrimSpace(string(ref))
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": name})); err != nil {
		return err
	}
	if err := tarDir(dir, out); err != nil {
		return err
	}
	d, _ := img.Digest()
	fmt.Printf("%s %s -> %s\n", name, d, out)
	return nil
}

type fileEntry struct {
	data []byte
	mode int64
}

// layerOf is one layer holding the files, with fixed times: the same inputs, the same digest.
func layerOf(files map[string]fileEntry) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, name := range sortedKeys(files) {
		for d := filepath.Dir(name); d != "." && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	for _, d := range sortedKeys(dirs) {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: time.Unix(0, 0)}); err != nil {
			return nil, err
		}
	}
	for _, name := range sortedKeys(files) {
		f := files[name]
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: f.mode, Size: int64(len(f.data)), ModTime: time.Unix(0, 0)}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithMediaType(types.OCILayer))
}

// tarDir writes the OCI layout directory as a tar file (an oci-archive).
func tarDir(dir, out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	err = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		h, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		h.Name, h.ModTime = rel, time.Unix(0, 0)
		if info.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil || info.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
