package vocab

import "testing"

func TestTiers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Tier
		ok   bool
	}{
		{"readonly", TierReadonly, true},
		{"mutating", TierMutating, true},
		{"destructive", TierDestructive, true},
		{"Readonly", TierReadonly, false},
		{"", TierReadonly, false},
	} {
		got, ok := ParseTier(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseTier(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
		if ok && got.String() != tc.in {
			t.Errorf("%v.String() = %q", got, got.String())
		}
	}
	if !(TierReadonly < TierMutating && TierMutating < TierDestructive) {
		t.Error("tiers out of order")
	}
}

func TestHostPatterns(t *testing.T) {
	for _, tc := range []struct {
		pattern, host string
		match, isGlob bool
		malformed     bool
	}{
		{"*", "web-1", true, true, false},
		{"web-?", "web-1", true, true, false},
		{"web-[12]", "web-3", false, true, false},
		{"web-1", "web-1", true, false, false},
		{"web-1", "web-10", false, false, false},
		{"[", "[", false, true, true},
	} {
		if got := MatchHost(tc.pattern, tc.host); got != tc.match {
			t.Errorf("MatchHost(%q, %q) = %v", tc.pattern, tc.host, got)
		}
		if got := IsPattern(tc.pattern); got != tc.isGlob {
			t.Errorf("IsPattern(%q) = %v", tc.pattern, got)
		}
		if err := ValidPattern(tc.pattern); (err != nil) != tc.malformed {
			t.Errorf("ValidPattern(%q) = %v", tc.pattern, err)
		}
	}
}
