// Package novatest runs one test body against two Novas: the simulator and a real OpenStack
// Nova (Zed, Debian's packages, the fake virt driver) that hack/nova.sh stands up. Both are
// reached over HTTP, through Keystone's catalog, by the same calls: a test of a Nova
// behaviour that passes on the simulator and fails on the real one shows what the simulator
// gets wrong. Test code only.
//
// The real Nova is one per machine and tests share it: a test holds it alone (a file lock,
// across the test binaries `go test ./...` runs at once) and starts from a clean world: every
// server deleted, every nova-compute running, up and enabled.
package novatest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drainctl/drainctl/ops/sim"
)

// EnvVar names the env file hack/nova.sh up writes: the real Nova's OS_* credentials.
const EnvVar = "DRAINCTL_REAL_NOVA"

// HypervisorEnvVar names the env file of the libvirt world (NOVA_VIRT=libvirt hack/nova.sh
// up): the same Nova over real guests, QEMU under Nova's libvirt driver on three machines.
const HypervisorEnvVar = "DRAINCTL_REAL_HYPERVISOR"

// The hosts every cloud has, as the real one names them.
var Hosts = []string{"compute-0", "compute-1", "compute-2"}

// Flavors are those hack/nova/catalog.py makes, by ID (= name), in both clouds.
var Flavors = map[string]sim.Flavor{
	"m1.tiny":   {Name: "m1.tiny", RAMMB: 512, VCPUs: 1, DiskGB: 1},
	"m1.small":  {Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20},
	"m1.medium": {Name: "m1.medium", RAMMB: 4096, VCPUs: 2, DiskGB: 40},
}

// Cloud is a Nova a test runs against.
type Cloud struct {
	Kind   string      // "sim" or "real"
	Env    []string    // OS_* variables: the admin, for drainctl and for API
	API    *API        // raw calls, for what a test sets up and reads back
	World  *sim.World  // the simulator's state; nil on the real Nova
	srv    *sim.Server // the simulator's server
	t      testing.TB  //
	state  string      // the real Nova's state directory
	image  string      // the image servers boot from
	flavor string      // the flavor they boot with
	guests bool        // the libvirt world: its servers are real guests
	ctx    context.Context
}

// Real reports whether this is the real Nova.
func (c *Cloud) Real() bool { return c.World == nil }

// Guests reports whether this is the libvirt world, whose servers are real guests.
func (c *Cloud) Guests() bool { return c.guests }

// Getenv reads Env, as drainctl's credential resolution does.
func (c *Cloud) Getenv(k string) string {
	for _, kv := range c.Env {
		if key, v, _ := strings.Cut(kv, "="); key == k {
			return v
		}
	}
	return ""
}

// Each runs body as two subtests, "sim" and "real". Without a real Nova (EnvVar unset) the
// real one skips, except under CI=true, where it fails: CI stands the real Nova up.
func Each(t *testing.T, body func(t *testing.T, c *Cloud)) {
	t.Helper()
	t.Run("sim", func(t *testing.T) { body(t, Sim(t)) })
	t.Run("real", func(t *testing.T) { body(t, Real(t)) })
}

// SimScale is the simulator's speed in these tests: simulated seconds per real second. Its
// durations stay Nova's (a live migration's seconds); the test waits less.
const SimScale = 10

// Sim is the simulator with the real Nova's shape: compute-0..2, the same flavors and an
// image, at SimScale.
func Sim(t testing.TB) *Cloud {
	return SimWith(t, sim.Options{Scale: SimScale, Seed: 1})
}

// SimWith is Sim with the simulator's options.
func SimWith(t testing.TB, opts sim.Options) *Cloud {
	t.Helper()
	w := sim.NewWorld(opts)
	for _, h := range Hosts {
		// The fake driver's host: 1000 vCPUs, 800,000 MB, 600,000 GB.
		w.AddHost(h, 1000, 800000, 600000)
	}
	for id, f := range Flavors {
		w.AddFlavor(id, f)
	}
	w.AddImage("cirros")
	srv, err := sim.Serve(w, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	c := &Cloud{Kind: "sim", Env: srv.Env(), World: w, srv: srv, t: t, image: "cirros", flavor: "m1.tiny", ctx: testCtx(t)}
	c.API = c.connect()
	return c
}

// Real is the real Nova, held by this test alone until it ends, from a clean world.
func Real(t testing.TB) *Cloud {
	t.Helper()
	return realFrom(t, EnvVar, "hack/nova.sh up", &Cloud{Kind: "real", flavor: "m1.tiny"})
}

// Hypervisor is the libvirt world: the real Nova over real guests (hack/guest), held by this
// test alone, from a clean world. Its servers boot GuestFlavor from the guest image.
func Hypervisor(t testing.TB) *Cloud {
	t.Helper()
	return realFrom(t, HypervisorEnvVar, "NOVA_VIRT=libvirt hack/nova.sh up", &Cloud{Kind: "libvirt", flavor: GuestFlavor, guests: true})
}

// GuestFlavor is the libvirt world's flavor (hack/nova/catalog.py): 256 MiB, 1 vCPU, 1 GB.
const GuestFlavor = "g.guest"

func realFrom(t testing.TB, envVar, up string, c *Cloud) *Cloud {
	t.Helper()
	file := os.Getenv(envVar)
	if file == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set: `make test` stands it up (%s)", envVar, up)
		}
		t.Skipf("%s is not set (make test, or eval $(%s) and export it)", envVar, up)
	}
	env, err := readEnv(file)
	if err != nil {
		t.Fatalf("reading %s: %v", file, err)
	}
	c.Env, c.t, c.state, c.ctx = env, t, filepath.Dir(file), testCtx(t)
	c.hold()
	c.API = c.connect()
	c.image = c.imageID()
	c.Reset()
	t.Cleanup(c.Reset)
	return c
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func readEnv(file string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var env []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
			env = append(env, line)
		}
	}
	return env, sc.Err()
}

// hold takes the real Nova for this test: an exclusive lock on a file in its state
// directory, released when the test ends (or its process dies).
func (c *Cloud) hold() {
	f, err := os.OpenFile(filepath.Join(c.state, "tests.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		c.t.Fatal(err)
	}
	fmt.Fprintf(f, "%s\n", c.t.Name())
	c.t.Cleanup(func() { f.Close() })
	// `make test` prints how many tests ran against each real world.
	if f, err := os.OpenFile(filepath.Join(c.state, "tests.ran"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err == nil {
		fmt.Fprintln(f, c.t.Name())
		f.Close()
	}
}

// script runs hack/nova.sh with args against this state directory.
func (c *Cloud) script(args ...string) {
	c.t.Helper()
	path := c.Getenv("DRAINCTL_NOVA_SCRIPT")
	out, err := exec.CommandContext(c.ctx, path, append(args, c.state)...).CombinedOutput()
	if err != nil {
		c.t.Fatalf("%s %v: %v\n%s", path, args, err, out)
	}
}

// StopCompute: host's nova-compute dies (the real one's process is killed; the simulator's
// host stops reporting). The machine's guests die with it.
func (c *Cloud) StopCompute(host string) {
	c.t.Helper()
	if c.guests {
		c.script("kill-host", host)
		return
	}
	if c.Real() {
		c.script("stop-compute", host)
		return
	}
	c.World.KillHost(host)
}

// StartCompute: host's nova-compute starts again (a machine back from the dead). The real
// one's fake driver starts with no guest.
func (c *Cloud) StartCompute(host string) {
	c.t.Helper()
	if c.guests {
		c.script("start-host", host)
		return
	}
	if c.Real() {
		c.script("start-compute", host)
		return
	}
	c.World.ReviveHost(host)
}

// Wait polls cond until it holds, failing the test after d (real time; the simulator's
// clock runs faster, so the same d is generous there).
func (c *Cloud) Wait(d time.Duration, what string, cond func() bool) {
	c.t.Helper()
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			c.t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(c.Poll())
	}
}

// Poll is how often a test reads what it waits for.
func (c *Cloud) Poll() time.Duration {
	if c.Real() {
		return 200 * time.Millisecond
	}
	return 20 * time.Millisecond
}

// Clock is now as the cloud's records will say it: the simulator's time runs faster than
// the test's.
func (c *Cloud) Clock() time.Time {
	if c.Real() {
		return time.Now()
	}
	return c.World.Clock().Now()
}

// Image is the ID of the image servers boot from.
func (c *Cloud) Image() string { return c.image }
