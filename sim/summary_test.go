package sim

import (
	"strings"
	"testing"
)

func TestPickChains(t *testing.T) {
	all := []Chain{{Name: "naive"}, {}, {Name: "heed"}}
	got, err := PickChains(all, "heed, policy 2")
	if err != nil || len(got) != 2 || got[0].Name != "heed" || got[1].Name != "policy 2" {
		t.Fatalf("PickChains = %+v, %v", got, err)
	}
	_, err = PickChains(all, "nope")
	if err == nil || !strings.Contains(err.Error(), `no policy "nope" in the scenario (it has "naive", "policy 2", "heed")`) {
		t.Errorf("unknown name: %v", err)
	}
}
