package sim

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

type microversion struct{ major, minor int }

var (
	minMicroversion = microversion{2, 1}
	maxMicroversion = microversion{2, 93}
)

func (v microversion) String() string { return fmt.Sprintf("%d.%d", v.major, v.minor) }

// atLeast reports v >= minor (major 2).
func (v microversion) atLeast(minor int) bool {
	return v.major > 2 || (v.major == 2 && v.minor >= minor)
}

type mvError struct {
	status int
	msg    string
}

// parseMicroversion reads OpenStack-API-Version ("compute 2.53") or the legacy
// X-OpenStack-Nova-API-Version; none means 2.1, "latest" the maximum. Out of range is 406.
func parseMicroversion(r *http.Request) (microversion, *mvError) {
	raw := ""
	for _, part := range strings.Split(r.Header.Get("OpenStack-API-Version"), ",") {
		if svc, v, ok := strings.Cut(strings.TrimSpace(part), " "); ok && svc == "compute" {
			raw = strings.TrimSpace(v)
		}
	}
	if raw == "" {
		raw = r.Header.Get("X-OpenStack-Nova-API-Version")
	}
	switch raw {
	case "":
		return minMicroversion, nil
	case "latest":
		return maxMicroversion, nil
	}
	a, b, ok := strings.Cut(raw, ".")
	major, err1 := strconv.Atoi(a)
	minor, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil {
		return microversion{}, &mvError{
			400,
			fmt.Sprintf("API Version String %s is of invalid format. Must be of format MajorNum.MinorNum.", raw),
		}
	}
	v := microversion{major, minor}
	if v.major != 2 || v.minor < minMicroversion.minor || v.minor > maxMicroversion.minor {
		return microversion{}, &mvError{406, fmt.Sprintf("Version %s is not supported by the API. Minimum is %s and maximum is %s.",
			raw, minMicroversion, maxMicroversion)}
	}
	return v, nil
}
