package novatest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The libvirt world's guests (hack/guest): what a test sets (the memory a guest holds and
// dirties, through its metadata) and what it reads of them beside Nova (the console, libvirt's
// own job information on the source machine).

// Guest metadata keys that hack/guest/init reads from Nova's config drive (and the simulator
// from the server's metadata).
const (
	GuestResident = "drainctl.test:resident" // MiB of non-zero pages the guest holds
	GuestDirty    = "drainctl.test:dirty"    // MiB a second of them written again
)

// BootGuest boots a server on host that holds resident MiB and dirties dirty MiB a second,
// and waits until it runs there; in the libvirt world, until its console says its memory is
// held (a move then copies real pages).
func (c *Cloud) BootGuest(name, host string, resident, dirty int) string {
	c.t.Helper()
	id := c.BootAsync(map[string]any{"name": name, "host": host, "metadata": map[string]string{
		GuestResident: strconv.Itoa(resident), GuestDirty: strconv.Itoa(dirty)}})
	c.waitBooted(id, name, host)
	if c.guests {
		c.WaitConsole(id, 60*time.Second, "drainctl-guest: ready:")
	}
	return id
}

// Console is the server's console log (os-getConsoleOutput): what the guest said on ttyS0.
func (c *Cloud) Console(id string) string {
	var out struct{ Output string }
	st, _ := c.API.Do("POST", "compute", "/servers/"+id+"/action", map[string]any{"os-getConsoleOutput": map[string]any{}}, &out)
	if st != 200 {
		return ""
	}
	return out.Output
}

// WaitConsole waits until the server's console holds want and returns the console.
func (c *Cloud) WaitConsole(id string, d time.Duration, want string) string {
	c.t.Helper()
	var out string
	c.Wait(d, fmt.Sprintf("server %s's console saying %q", id, want), func() bool {
		out = c.Console(id)
		return strings.Contains(out, want)
	})
	return out
}

// HostAddress is a machine's address in the libvirt world (hack/nova/libvirt.sh).
func HostAddress(host string) string {
	n, _ := strconv.Atoi(host[strings.LastIndexByte(host, '-')+1:])
	return fmt.Sprintf("10.213.0.%d", 10+n)
}

// Job is libvirt's own view of a domain's running migration job on its source (virsh
// domjobinfo --rawstats), read at At.
type Job struct {
	At                                   time.Time
	Running                              bool // a job of type unbounded
	MemoryTotal, MemoryProcessed, MemRem int64
	BytesPerSec                          int64 // libvirt's memory_bps
}

// JobInfo reads the domain's job on host's libvirtd.
func JobInfo(host, domain string) (Job, error) {
	out, err := exec.Command("virsh", "-c", "qemu+tcp://"+HostAddress(host)+"/system", "domjobinfo", domain, "--rawstats").Output()
	j := Job{At: time.Now()}
	if err != nil {
		return j, err
	}
	for _, line := range strings.Split(string(out), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch strings.TrimSpace(k) {
		case "Job type":
			j.Running = n == 2 // VIR_DOMAIN_JOB_UNBOUNDED
		case "memory_total":
			j.MemoryTotal = n
		case "memory_processed":
			j.MemoryProcessed = n
		case "memory_remaining":
			j.MemRem = n
		case "memory_bps":
			j.BytesPerSec = n
		}
	}
	return j, nil
}

// JobLog samples a domain's migration job on its source every interval until stopped.
type JobLog struct {
	mu   sync.Mutex
	jobs []Job
	stop chan struct{}
	done chan struct{}
}

// WatchJob starts sampling domain's job on host.
func WatchJob(host, domain string, every time.Duration) *JobLog {
	l := &JobLog{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for {
			if j, err := JobInfo(host, domain); err == nil && j.Running && j.MemoryTotal > 0 {
				l.mu.Lock()
				l.jobs = append(l.jobs, j)
				l.mu.Unlock()
			}
			select {
			case <-l.stop:
				return
			case <-time.After(every):
			}
		}
	}()
	return l
}

// Stop ends the sampling and returns every sample, oldest first.
func (l *JobLog) Stop() []Job {
	close(l.stop)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.jobs
}

// InstanceName is the server's libvirt domain name (OS-EXT-SRV-ATTR:instance_name).
func (c *Cloud) InstanceName(id string) string {
	c.t.Helper()
	var out struct {
		Server struct {
			Name string `json:"OS-EXT-SRV-ATTR:instance_name"`
		}
	}
	c.API.Must("GET", "compute", "/servers/"+id, nil, &out, 200)
	return out.Server.Name
}

// DisksOn lists the machines whose own disk holds the server's root disk (instances/ID/disk
// under each machine's directory of the world's state): where its local disk is.
func (c *Cloud) DisksOn(id string) []string {
	var on []string
	for _, h := range Hosts {
		if _, err := os.Stat(filepath.Join(c.state, "hosts", h, "instances", id, "disk")); err == nil {
			on = append(on, h)
		}
	}
	return on
}

// SharedInstances gives the libvirt world's machines one disk (on) or each its own (off), as
// a cloud with shared storage has: every machine is powered off and on again to see it, its
// servers should be none. The world goes back to its own disks when the test ends.
func (c *Cloud) SharedInstances(on bool) {
	c.t.Helper()
	flag := filepath.Join(c.state, "shared-instances")
	if on {
		if err := os.WriteFile(flag, nil, 0o644); err != nil {
			c.t.Fatal(err)
		}
		c.t.Cleanup(func() { c.SharedInstances(false) })
	} else {
		os.Remove(flag)
	}
	for _, h := range Hosts {
		c.script("kill-host", h)
		started := time.Now().UTC().Truncate(time.Second)
		c.script("start-host", h)
		// Its service shows "up" on the old process's last report for a while: wait for the
		// new one's (the scheduler's ComputeFilter refuses the host in the gap between).
		c.Wait(90*time.Second, h+"'s new nova-compute reporting", func() bool {
			at, err := time.Parse("2006-01-02T15:04:05.000000", c.Service(h).UpdatedAt)
			return err == nil && at.After(started)
		})
	}
	c.Reset()
}

// KillLibvirtd: host's libvirt daemon dies (its guests run on).
func (c *Cloud) KillLibvirtd(host string) {
	c.t.Helper()
	c.script("kill-libvirtd", host)
}

// StartLibvirtd starts host's libvirt daemon again.
func (c *Cloud) StartLibvirtd(host string) {
	c.t.Helper()
	c.script("start-libvirtd", host)
}
