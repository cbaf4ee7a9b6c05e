// Command deploygen writes deploy/'s manifests from the Helm chart, their one source: the
// plain files of deploy/ and the kustomize base and overlays (internal/deploychart's
// Layout). Run it from the repository's root after changing deploy/chart:
//
//	go run ./hack/deploygen
//
// TestTheManifestsAreTheChartsOutput fails while a file differs from what it writes.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/drainctl/drainctl/internal/deploychart"
)

func main() {
	files, err := deploychart.Generated("deploy/chart")
	if err != nil {
		fmt.Fprintln(os.Stderr, "deploygen:", err)
		os.Exit(1)
	}
	for name, text := range files {
		p := filepath.Join("deploy", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "deploygen:", err)
			os.Exit(1)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "deploygen:", err)
			os.Exit(1)
		}
	}
	fmt.Printf("deploygen: %d files written under deploy/\n", len(files))
}
