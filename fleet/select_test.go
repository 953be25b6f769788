package fleet

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/fleetmux/fleetmux/fleet/vocab"
)

func TestSelection(t *testing.T) {
	aliases := []string{"dev1", "dev2", "dev-old", "build-a", "build-bb", "prod-1", "Prod-2", "local"}
	tests := []struct {
		give    string
		want    []string
		wantErr bool
	}{
		{give: "", want: nil},
		{give: " , ,", want: nil},
		{give: "*", want: []string{"dev1", "dev2", "dev-old", "build-a", "build-bb", "prod-1", "Prod-2"}},
		{give: "dev*", want: []string{"dev1", "dev2", "dev-old"}},
		{give: "dev*,!dev-old", want: []string{"dev1", "dev2"}},
		{give: "!dev-old,dev*", want: []string{"dev1", "dev2"}}, // exclusion wins wherever it is
		{give: " dev1 , build-? ", want: []string{"dev1", "build-a"}},
		{give: "*,!prod-*", want: []string{"dev1", "dev2", "dev-old", "build-a", "build-bb", "Prod-2"}},
		{give: "[pP]rod-*", want: []string{"prod-1", "Prod-2"}},
		{give: "dev[12]", want: []string{"dev1", "dev2"}},
		{give: "local", want: nil}, // the reserved host never comes from a selection
		{give: "nomatch", want: nil},
		{give: "*,! dev1", want: []string{"dev2", "dev-old", "build-a", "build-bb", "prod-1", "Prod-2"}},
		{give: "!prod-*", wantErr: true}, // only exclusions
		{give: "dev*,!", wantErr: true},
		{give: "dev[", wantErr: true},
		{give: `dev\`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			sel, err := ParseSelection(tt.give)
			if tt.wantErr {
				if !errors.Is(err, ErrBadSelection) || !strings.HasPrefix(err.Error(), "fleet: ") {
					t.Fatalf("err = %v, want ErrBadSelection", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, a := range aliases {
				if sel.Match(a) {
					got = append(got, a)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("selected %q, want %q", got, tt.want)
			}
			if sel.Empty() != (len(tt.want) == 0 && !strings.Contains(tt.give, "local") && !strings.Contains(tt.give, "nomatch")) {
				t.Errorf("Empty() = %v", sel.Empty())
			}
			if sel.String() != strings.TrimSpace(tt.give) {
				t.Errorf("String() = %q", sel.String())
			}
		})
	}
}

func TestInventorySelectAndCheck(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"cfg": "Host web2 web1 db1\nHost local\n"})
	inv, err := LoadInventory(InventoryOptions{UserConfig: filepath.Join(dir, "cfg"), OnlyUserConfig: true})
	if err != nil {
		t.Fatal(err)
	}
	sel, err := ParseSelection("web*,local")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := inv.Select(sel), []string{"web2", "web1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Select = %q, want %q (inventory order)", got, want)
	}
	if got := inv.Select(Selection{}); got != nil {
		t.Errorf("zero Selection selects %q", got)
	}
	tests := []struct {
		alias string
		want  error
	}{
		{"web1", nil},
		{"db1", ErrNotSelected},
		{"nope", ErrUnknownHost},
		{LocalHost, ErrUnknownHost},
	}
	for _, tt := range tests {
		err := inv.Check(sel, tt.alias)
		if !errors.Is(err, tt.want) || (err != nil && !strings.Contains(err.Error(), tt.alias)) {
			t.Errorf("Check(%q) = %v, want %v naming the host", tt.alias, err, tt.want)
		}
	}
}

func FuzzParseSelection(f *testing.F) {
	for _, s := range []string{"", "*", "dev*,!dev-old", "!", "[", `\`, "a,,b", "!a,b", "[!a]", "x[^-]y"} {
		f.Add(s, "dev-1")
	}
	f.Fuzz(func(t *testing.T, patterns, alias string) {
		sel, err := ParseSelection(patterns)
		if err != nil {
			if !errors.Is(err, ErrBadSelection) {
				t.Fatalf("error %v is not ErrBadSelection", err)
			}
			return
		}
		m := sel.Match(alias)
		if alias == LocalHost && m {
			t.Fatal("local selected")
		}
		if m && sel.Empty() {
			t.Fatal("empty selection matched")
		}
	})
}

func TestHostSafetyShadowed(t *testing.T) {
	tests := []struct {
		specs []string
		want  []string // patterns reported
	}{
		{[]string{"*=mutating", "rt-good=readonly"}, nil},
		{[]string{"*=readonly", "dev-1=destructive"}, []string{"dev-1=destructive"}},
		{[]string{"dev-*=readonly", "dev-*=readonly"}, []string{"dev-*=readonly"}},
		{[]string{"nomatch-*=readonly"}, []string{"nomatch-*=readonly"}},
		{[]string{"dev-1=mutating", "dev-*=destructive"}, nil}, // dev-2 is still capped by the second
	}
	aliases := []string{"local", "dev-1", "dev-2", "rt-good"}
	for _, tt := range tests {
		h, err := ParseHostSafety(tt.specs)
		if err != nil {
			t.Fatal(err)
		}
		got := h.Shadowed(aliases)
		if len(got) != len(tt.want) {
			t.Errorf("%v: warnings %q, want %d about %v", tt.specs, got, len(tt.want), tt.want)
			continue
		}
		for i, w := range tt.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%v: warning %q does not name %s", tt.specs, got[i], w)
			}
		}
	}
}

func TestHostSafety(t *testing.T) {
	h, err := ParseHostSafety([]string{"prod-*=readonly", "prod-db=destructive", " build-* = Mutating ,local=readonly", "*=destructive"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		alias  string
		want   vocab.Tier
		wantOK bool
	}{
		{"prod-1", vocab.TierReadonly, true},
		{"prod-db", vocab.TierReadonly, true}, // the lowest matching tier wins
		{"build-7", vocab.TierMutating, true},
		{"local", vocab.TierReadonly, true},
		{"other", vocab.TierDestructive, true},
	}
	for _, tt := range tests {
		got, ok := h.Cap(tt.alias)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("Cap(%q) = %q, %v; want %q, %v", tt.alias, got, ok, tt.want, tt.wantOK)
		}
	}
	if tier, ok := (HostSafety{}).Cap("x"); ok {
		t.Errorf("empty HostSafety caps x at %q", tier)
	}
	h2, _ := ParseHostSafety([]string{"a=readonly"})
	if _, ok := h2.Cap("b"); ok {
		t.Error("b capped")
	}

	// Order does not matter: a later, narrower rule still restricts.
	for _, specs := range [][]string{{"*=mutating", "rt-good=readonly"}, {"rt-good=readonly", "*=mutating"}} {
		h3, _ := ParseHostSafety(specs)
		if got, _ := h3.Cap("rt-good"); got != vocab.TierReadonly {
			t.Errorf("%v: rt-good capped at %q, want readonly", specs, got)
		}
		if got, _ := h3.Cap("rt-other"); got != vocab.TierMutating {
			t.Errorf("%v: rt-other capped at %q, want mutating", specs, got)
		}
	}

	for _, bad := range []string{"prod", "=readonly", "prod=", "prod=admin", "pro[d=readonly", "prod=readonly=x"} {
		t.Run(bad, func(t *testing.T) {
			_, err := ParseHostSafety([]string{bad})
			if !errors.Is(err, ErrBadHostSafety) || !strings.Contains(err.Error(), "fleet: ") {
				t.Errorf("err = %v, want ErrBadHostSafety", err)
			}
		})
	}
}
