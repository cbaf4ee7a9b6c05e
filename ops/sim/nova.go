package sim

// The simulated Nova API, one file per API family: nova_services.go (os-services),
// nova_hypervisors.go, nova_servers.go (servers and their actions), nova_migrations.go
// (os-migrations and a server's migrations) and nova_instance_actions.go. Here: what they share.

import (
	"time"
)

func novaTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format("2006-01-02T15:04:05.000000")
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
