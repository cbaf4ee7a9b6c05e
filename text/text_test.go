package text

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drainctl/drainctl/model"
)

func TestBytes(t *testing.T) {
	for in, want := range map[int64]string{0: "0B", 1023: "1023B", 1024: "1K", 1536: "1.5K", 2 << 30: "2G",
		5<<30 + 1<<29: "5.5G", 256 << 30: "256G", 3 << 40: "3T"} {
		if got := Bytes(in); got != want {
			t.Errorf("Bytes(%d) = %s, want %s", in, got, want)
		}
	}
}

func TestDuration(t *testing.T) {
	for in, want := range map[time.Duration]string{-1: "-", 0: "0s", 44500 * time.Millisecond: "45s",
		200 * time.Second: "3m20s", 65 * time.Minute: "1h05m"} {
		if got := Duration(in); got != want {
			t.Errorf("Duration(%v) = %s, want %s", in, got, want)
		}
	}
}

func TestRateHasUnits(t *testing.T) {
	for in, want := range map[float64]string{0: "-", 512: "512 B/s", 1536: "1.5 KiB/s", 1 << 30: "1.0 GiB/s", 350 << 20: "350 MiB/s", 12.5 * (1 << 20): "12.5 MiB/s"} {
		if got := Rate(in); got != want {
			t.Errorf("Rate(%v) = %q, want %q", in, got, want)
		}
	}
}

// A value printed in a command to paste is one shell word: a tenant's VM name cannot add
// commands or options to it.
func TestShellWordQuotesUntrustedValues(t *testing.T) {
	for in, want := range map[string]string{
		"build-old":                            "build-old",
		"fc256408-54c1-4dfc-acaa-8a2cecce5a3a": "fc256408-54c1-4dfc-acaa-8a2cecce5a3a",
		"x $(rm -rf ~)":                        `'x $(rm -rf ~)'`,
		"it's":                                 `'it'\''s'`,
		"-oProxyCommand=x":                     `'-oProxyCommand=x'`,
		"":                                     `''`,
	} {
		if got := ShellWord(in); got != want {
			t.Errorf("ShellWord(%q) = %s, want %s", in, got, want)
		}
	}
	r := model.Reason{Object: "x $(id)", ObjectID: "", Override: model.OverrideSkipVM}
	if got := Flag(r); got != `--skip-vm 'x $(id)'` {
		t.Errorf("Flag = %s", got)
	}
	r.ObjectID = "fc256408-54c1-4dfc-acaa-8a2cecce5a3a"
	if got := Flag(r); got != "--skip-vm "+r.ObjectID {
		t.Errorf("Flag with an ID = %s", got)
	}
	// A VM whose owner asks it to stay: leave it, or the named override moves it anyway.
	r = model.Reason{Code: model.VMAsksToStay, Severity: model.Blocks, Object: "db; rm -rf /", Override: model.OverrideSkipVM}
	if got := strings.Join(Flags(r), ", "); got != `--skip-vm 'db; rm -rf /', --override-vm-policy 'db; rm -rf /'` {
		t.Errorf("Flags of a VM asking to stay = %s", got)
	}
	r.By, r.Override = model.OverrideVMPolicy, ""
	if got := By(r); got != `--override-vm-policy 'db; rm -rf /'` {
		t.Errorf("By of a VM moved under the override = %s", got)
	}
}

// A migration's rate keeps one unit however fast it goes.
func TestMigrationRateKeepsItsUnit(t *testing.T) {
	for bps, want := range map[float64]string{900 << 20: "900 MiB/s", 1536 << 20: "1536 MiB/s", 5 << 19: "2.5 MiB/s", 0: "-"} {
		if got := MigrationRate(bps); got != want {
			t.Errorf("MigrationRate(%v) = %s, want %s", bps, got, want)
		}
	}
}

// A rate just under 1 GiB/s is not printed as 1024 MiB/s beside 1.0 GiB/s a moment later:
// it reads as one series.
func TestARateNeverPrints1024(t *testing.T) {
	for _, bps := range []float64{1023.7 * (1 << 20), 1024 * (1 << 20), 1023.9 * (1 << 10)} {
		if got := Rate(bps); strings.HasPrefix(got, "1024") {
			t.Errorf("Rate(%.0f) = %s", bps, got)
		}
	}
	if got := Rate(1023.7 * (1 << 20)); got != "1.0 GiB/s" {
		t.Errorf("Rate(1023.7 MiB/s) = %s, want 1.0 GiB/s", got)
	}
}

// A running VM moved cold because --cold-migrate-running was given says the flag that makes it
// so, never "use --cold-migrate-running to override".
func TestADowntimeNoteNamesTheFlagGiven(t *testing.T) {
	note := model.Reason{Code: model.Downtime, Severity: model.Notes, Object: "vm-a",
		Message: "moved cold: stopped, moved and started again (8 GiB)", By: model.OverrideColdMigrateRunning}
	if s := Reason(note); strings.Contains(s, "to override") || !strings.Contains(s, "(--cold-migrate-running)") {
		t.Errorf("the note says %q", s)
	}
}

// The forecast's room line says what bounds the campaign, without repeating --parallel.
func TestTheRoomLineSaysWhatBoundsTheCampaign(t *testing.T) {
	three, five := 3, 5
	if l := ForecastLines(model.Forecast{RoomOutAtOnce: &three, Parallel: 3}); !slices.Contains(l,
		"the room for the next host failure holds with 3 node(s) out at once: it runs no more") {
		t.Errorf("bounded by the room: %q", l)
	}
	if l := ForecastLines(model.Forecast{RoomOutAtOnce: &five, Parallel: 2}); !slices.Contains(l,
		"the room for the next host failure would hold with up to 5 node(s) out at once; it runs 2") {
		t.Errorf("bounded by --parallel: %q", l)
	}
}
