// Package english writes counts the way a person would: "1 hunk", "2 hunks", "1 apply",
// "3 applies". Every message of shadow that counts something goes through Count, so that no
// screen says "1 hunks" or "apply(s)".
package english

import "strconv"

// Count is n followed by noun, in the plural unless n is 1: Count(1, "hunk") is "1 hunk",
// Count(0, "path") is "0 paths". The plural is made by Plural, or is the given plural when the
// word is irregular: Count(2, "child", "children").
func Count(n int, noun string, plural ...string) string {
	return strconv.Itoa(n) + " " + Noun(n, noun, plural...)
}

// Noun is noun in the plural unless n is 1, for a message that writes the number apart:
// "3✓ hunks". A given plural wins over Plural's rule.
func Noun(n int, noun string, plural ...string) string {
	if n == 1 || n == -1 {
		return noun
	}
	if len(plural) > 0 {
		return plural[0]
	}
	return Plural(noun)
}

// Plural is the regular English plural of a noun, or of the last word of a phrase: "hunk" →
// "hunks", "apply" → "applies", "registry" → "registries", "bus" → "buses", "patch" → "patches",
// "day" → "days". Irregular nouns are given to Count as its plural.
func Plural(noun string) string {
	n := len(noun)
	if n == 0 {
		return noun
	}
	last := noun[n-1]
	switch {
	case last == 'y' && n > 1 && !isVowel(noun[n-2]):
		return noun[:n-1] + "ies"
	case last == 's' || last == 'x' || last == 'z':
		return noun + "es"
	case n > 1 && (noun[n-2:] == "ch" || noun[n-2:] == "sh"):
		return noun + "es"
	}
	return noun + "s"
}

func isVowel(c byte) bool {
	switch c {
	case 'a', 'e', 'i', 'o', 'u':
		return true
	}
	return false
}
