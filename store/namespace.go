package store

import (
	"slices"
	"strings"
)

// Sep joins namespace labels in the string form backends store
// ("users.u1.memories"). Labels may not contain it, so the joined form is
// unambiguous and sorts and prefix-matches like the label sequence.
const Sep = "."

// Wildcard matches any one label in ListNamespacesOptions.Prefix and Suffix.
const Wildcard = "*"

// ValidateNamespace checks that ns is a usable item namespace: at least one
// label, every label non-empty and free of ".". The error is a
// *NamespaceError naming the bad label.
func ValidateNamespace(ns []string) error {
	if len(ns) == 0 {
		return &NamespaceError{Namespace: ns, Label: -1, Reason: "is empty: an item needs at least one label"}
	}
	return validateLabels(ns, false)
}

// validatePrefix checks a search prefix: it may be empty.
func validatePrefix(ns []string, wildcards bool) error {
	return validateLabels(ns, wildcards)
}

func validateLabels(ns []string, wildcards bool) error {
	for i, l := range ns {
		switch {
		case l == "":
			return &NamespaceError{Namespace: ns, Label: i, Reason: "is empty: labels must be non-empty strings"}
		case strings.Contains(l, Sep):
			return &NamespaceError{Namespace: ns, Label: i, Reason: `contains "." which labels may not contain`}
		case l == Wildcard && !wildcards:
			return &NamespaceError{Namespace: ns, Label: i, Reason: `is the wildcard "*", which only ListNamespaces prefixes and suffixes accept`}
		}
	}
	return nil
}

// JoinNamespace returns the stored string form of ns.
func JoinNamespace(ns []string) string { return strings.Join(ns, Sep) }

// SplitNamespace is the inverse of JoinNamespace.
func SplitNamespace(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, Sep)
}

// PrefixRange returns the half-open range [lo, hi) of joined namespaces that
// lie strictly under the joined prefix p (p itself is matched separately by
// equality). It relies on byte-wise ordering: "a.b." <= x < "a.b/" holds
// exactly for the namespaces that start with "a.b." because '/' follows '.'.
func PrefixRange(p string) (lo, hi string) {
	return p + Sep, p + "/"
}

// HasPrefix reports whether ns starts with the labels of prefix.
func HasPrefix(ns, prefix []string) bool {
	return len(ns) >= len(prefix) && slices.Equal(ns[:len(prefix)], prefix)
}

// literalPrefix returns the labels of p before its first wildcard.
func literalPrefix(p []string) []string {
	for i, l := range p {
		if l == Wildcard {
			return p[:i]
		}
	}
	return p
}

func matchLabels(ns, pattern []string) bool {
	if len(ns) != len(pattern) {
		return false
	}
	for i, l := range pattern {
		if l != Wildcard && l != ns[i] {
			return false
		}
	}
	return true
}

// matchNamespace applies ListNamespacesOptions' prefix and suffix patterns.
func matchNamespace(ns, prefix, suffix []string) bool {
	if len(prefix) > len(ns) || len(suffix) > len(ns) {
		return false
	}
	return matchLabels(ns[:len(prefix)], prefix) && matchLabels(ns[len(ns)-len(suffix):], suffix)
}

func compareNamespaces(a, b []string) int {
	return slices.Compare(a, b)
}
