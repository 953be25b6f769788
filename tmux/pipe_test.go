package tmux

import "testing"

func TestEscapeFormatTime(t *testing.T) {
	for _, tt := range []struct {
		give, want string
	}{
		{"plain.log", "plain.log"},
		{"", ""},
		{"#{pane_id}", "##{pane_id}"},
		{"##{pane_id}", "####{pane_id}"},
		{"#S", "##S"},
		{"#(echo hi)", "##(echo hi)"},
		{"#[fg=red]", "#[fg=red]"},
		{"##[fg=red]", "##[fg=red]"},
		{"issue #42", "issue ##42"},
		{"a#", "a##"},
		{"100%done", "100%%done"},
		{"date-%Y", "date-%%Y"},
		{"%%", "%%%%"},
		{"#%#[", "##%%#["},
		{"héllo#é", "héllo##é"},
	} {
		if got := EscapeFormatTime(tt.give); got != tt.want {
			t.Errorf("EscapeFormatTime(%q) = %q, want %q", tt.give, got, tt.want)
		}
	}
}

func TestPipeCommand(t *testing.T) {
	for _, tt := range []struct {
		path   string
		append bool
		want   string
	}{
		{"/tmp/out.log", true, "cat >> /tmp/out.log"},
		{"/tmp/out.log", false, "cat > /tmp/out.log"},
		{"/tmp/has space.log", true, "cat >> '/tmp/has space.log'"},
		{"/tmp/fmt-#{pane_id}.log", true, "cat >> '/tmp/fmt-##{pane_id}.log'"},
		{"/tmp/style-#[fg=red].log", true, "cat >> '/tmp/style-#[fg=red].log'"},
		{"/tmp/100%done.log", true, "cat >> /tmp/100%%done.log"},
		{"/tmp/it's.log", true, `cat >> '/tmp/it'"'"'s.log'`},
	} {
		if got := PipeCommand(tt.path, tt.append); got != tt.want {
			t.Errorf("PipeCommand(%q, %v) = %q, want %q", tt.path, tt.append, got, tt.want)
		}
	}
}
