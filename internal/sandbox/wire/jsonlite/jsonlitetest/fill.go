// Package jsonlitetest helps test the hand-written codecs built on package
// jsonlite against encoding/json.
package jsonlitetest

import (
	"fmt"
	"reflect"
)

// Fill sets every field of the struct p points to, nested structs, pointers
// and slices included, to a value that is not the zero value and differs
// from field to field. A codec that forgets a field then decodes or encodes
// something other than encoding/json does for the same struct, whatever
// fields the struct gains later.
func Fill(p any) {
	n := 0
	fill(reflect.ValueOf(p).Elem(), &n)
}

func fill(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), n)
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), n)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		fill(s.Index(0), n)
		fill(s.Index(1), n)
		v.Set(s)
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", *n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n))
	default:
		panic(fmt.Sprintf("jsonlitetest: cannot fill a %s", v.Type()))
	}
}
