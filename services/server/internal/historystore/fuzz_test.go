package historystore

import (
	"testing"

	"uastack.dev/pkg/codec"
	"uastack.dev/pkg/history"
	"uastack.dev/pkg/ua"
)

// FuzzDecodeStored decodes any bytes as a stored value, modified value and event, as a
// store whose files were damaged would hold them: an error, never a panic, and no more
// event fields than maxEventFields.
func FuzzDecodeStored(f *testing.F) {
	v := history.Stored{Value: codec.DataValue{Value: codec.DoubleVariant(1.5), SourceTimestamp: 1, ServerTimestamp: 2},
		Mod: ua.ModificationInfo{ModificationTime: 3, UpdateType: ua.HistoryUpdateTypeReplace, UserName: "u"}}
	f.Add(encodeValue(&v, false))
	f.Add(encodeValue(&v, true))
	f.Add(encodeEvent(&history.Event{Time: 5, Type: codec.NewNumericNodeId(0, 2041),
		Fields: []history.EventField{{Key: "0:Message", Value: codec.MustVariant(codec.LocalizedText{Text: "m"})}}}))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f})
	f.Fuzz(func(t *testing.T, b []byte) {
		var d codec.Decoder
		for _, modified := range []bool{false, true} {
			d.Reset(b)
			_, _ = decodeValue(&d, modified)
		}
		d.Reset(b)
		ev, err := decodeEvent(&d)
		if err == nil && len(ev.Fields) > maxEventFields {
			t.Fatalf("%d fields", len(ev.Fields))
		}
	})
}
