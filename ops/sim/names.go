package sim

import "k8s.io/apimachinery/pkg/types"

type typesUIDAlias = types.UID

func typesUID(s string) types.UID { return types.UID(s) }

// randSuffix makes a pod-name suffix in the ReplicaSet controller's alphabet (5 characters).
// It is n written in base 27, scrambled by a multiplier prime to 27^5, so it is unique for
// every n below 27^5 (14 million) yet looks random.
func randSuffix(n int) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	const space = 27 * 27 * 27 * 27 * 27
	v := (n * 7919) % space
	b := make([]byte, 5)
	for i := range b {
		b[i] = alphabet[v%27]
		v /= 27
	}
	return string(b)
}
