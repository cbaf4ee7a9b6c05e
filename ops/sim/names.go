package sim

import "k8s.io/apimachinery/pkg/types"

type typesUIDAlias = types.UID

func typesUID(s string) types.UID { return types.UID(s) }

// randSuffix makes a pod-name suffix like the ReplicaSet controller's (5 characters).
func randSuffix(n int) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, 5)
	for i := range b {
		b[i] = alphabet[n%len(alphabet)]
		n = n/len(alphabet) + i*7 + 3
	}
	return string(b)
}
