package doctor

import (
	"encoding/json"
	"testing"
)

func TestStripJSONComments(t *testing.T) {
	in := "{\"a\": \"//not\", // yes\n /* b */ \"c\": \"/*x*/\\\"//\"}"
	var v map[string]string
	if err := json.Unmarshal(stripJSONComments([]byte(in)), &v); err != nil || v["a"] != "//not" || v["c"] != `/*x*/"//` {
		t.Fatalf("%v %v", v, err)
	}
}
