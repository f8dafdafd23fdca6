package main

import (
	"strings"
	"testing"
)

// TestRandLettersCoverAlphabet checks that the generated text is lowercase
// letters only, that every letter turns up, and that two strings differ.
func TestRandLettersCoverAlphabet(t *testing.T) {
	s := randString(2000)
	if len(s) != 2000 || strings.Trim(s, letters) != "" {
		t.Fatalf("randString(2000) is %d bytes with characters outside a-z", len(s))
	}
	for _, c := range letters {
		if !strings.ContainsRune(s, c) {
			t.Errorf("letter %c never drawn in 2000", c)
		}
	}
	if a, b := randString(64), randString(64); a == b {
		t.Error("two random strings are equal")
	}
	ls := randLetters(500)
	if len(ls) != 500 || len(strings.Join(ls, "")) != 500 || strings.Trim(strings.Join(ls, ""), letters) != "" {
		t.Errorf("randLetters(500) gives %d strings that are not single letters", len(ls))
	}
}
