package replay

import "bytes"

// A script's line about a GPU is cut into fields at its separators (|, ;,
// tabs, commas, " - "), and each field into labelled values: the words
// before a number are its label, the word after it its unit ("Memory Used:
// 8595 MiB", "util 45%", "GPU0", "temp=60°C", "Mem: 8.4/24.0 GB"). What a
// label names is looked up as a CSV column's name is (columns.go), so the
// names scripts use for their columns and for their lines are the same.
// Text in parentheses is a unit for the label before it ("Memory (MiB):
// 8595") or an aside, not read ("8595MB (35%)").

// textValue is a value of a script's line and the label before it.
type textValue struct {
	label []byte // as written, without the ':' after it; empty when the value has none
	v     []byte // the value as written: "8595MB/24576MB", "45 %", "0"
	unit  []byte // the unit in parentheses after the label, or nil
	field int    // the field of the line it is in
	src   []byte // the label and the value as written, for notes
}

// textField is a field of a script's line: the text between separators.
type textField struct {
	text   []byte
	values int // how many of the line's values it holds
}

// scanText cuts a line (its time taken away) into fields and values,
// appending them to the slices given.
func scanText(line []byte, fields []textField, values []textValue) ([]textField, []textValue) {
	for len(line) > 0 {
		end, next := fieldEnd(line)
		f := trimSpace(line[:end])
		n := len(values)
		values = scanField(f, len(fields), values)
		fields = append(fields, textField{text: f, values: len(values) - n})
		line = line[next:]
	}
	return fields, values
}

// fieldEnd finds where the field at the start of b ends, and where the
// next one starts.
func fieldEnd(b []byte) (end, next int) {
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '|', ';', '\t':
			return i, i + 1
		case ',':
			if i > 0 && isDigit(b[i-1]) && i+4 <= len(b) && isDigits(b[i+1:i+4]) && (i+4 == len(b) || !isDigit(b[i+4])) {
				continue // a thousands separator: "8,595 MiB"
			}
			return i, i + 1
		case ' ':
			for _, sep := range []string{" - ", " -- ", " — ", " – "} {
				if bytes.HasPrefix(b[i:], []byte(sep)) {
					return i, i + len(sep)
				}
			}
		}
	}
	return len(b), len(b)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// scanField appends the labelled values of one field.
func scanField(f []byte, field int, values []textValue) []textValue {
	labelAt, labelEnd := -1, -1 // the label being gathered
	var hint []byte
	i := 0
	for i < len(f) {
		c := f[i]
		switch {
		case c == ' ' || c == ':' || c == '=' || c == '#':
			i++
		case c == '(':
			end := bytes.IndexByte(f[i:], ')')
			if end < 0 {
				return values
			}
			if in := trimSpace(f[i+1 : i+end]); isUnit(in) {
				hint = in
			}
			i += end + 1
		case isLetter(c):
			j := i
			for j < len(f) && (isLetter(f[j]) || isDigit(f[j]) || f[j] == '_' || f[j] == '.' && j+1 < len(f) && isLetter(f[j+1])) {
				j++
			}
			word := f[i:j]
			if k := gluedIndex(word); k > 0 { // "GPU0": the label and the index
				values = append(values, textValue{label: word[:k], v: word[k:], field: field, src: word})
				labelAt, hint = -1, nil
				i = j
				continue
			}
			if labelAt < 0 {
				labelAt = i
			}
			labelEnd = j
			i = j
		case isDigit(c) || (c == '-' || c == '+' || c == '.') && i+1 < len(f) && isDigit(f[i+1]):
			end := valueEnd(f, i)
			v := textValue{v: f[i:end], unit: hint, field: field, src: f[i:end]}
			if labelAt >= 0 {
				v.label = f[labelAt:labelEnd]
				v.src = f[labelAt:end]
			}
			values = append(values, v)
			labelAt, hint = -1, nil
			i = end
		default:
			i++ // a quote, a bracket, a stray sign
		}
	}
	return values
}

// valueEnd returns where the value starting at i ends: a number, its unit,
// and "/ number unit" for a pair ("8595MB / 24576MB", "250 W / 350 W").
func valueEnd(f []byte, i int) int {
	end := numberEnd(f, i)
	end = unitEnd(f, end)
	j := end
	for j < len(f) && f[j] == ' ' {
		j++
	}
	if j < len(f) && f[j] == '/' {
		k := j + 1
		for k < len(f) && f[k] == ' ' {
			k++
		}
		if k < len(f) && isDigit(f[k]) {
			return unitEnd(f, numberEnd(f, k))
		}
	}
	return end
}

// numberEnd returns where the number at i ends.
func numberEnd(f []byte, i int) int {
	j := i + 1
	for j < len(f) && (isDigit(f[j]) || f[j] == '.' && j+1 < len(f) && isDigit(f[j+1])) {
		j++
	}
	return j
}

// unitEnd returns where the unit after a number ends, blanks before it
// allowed, or i when what follows is no unit.
func unitEnd(f []byte, i int) int {
	j := i
	for j < len(f) && f[j] == ' ' {
		j++
	}
	k := j
	for k < len(f) && f[k] != ' ' && f[k] != '/' && f[k] != ')' && f[k] != '(' && f[k] != ':' && !isDigit(f[k]) {
		k++
	}
	if k > j && isUnit(f[j:k]) {
		return k
	}
	return i
}

// gluedIndex reports where the number starts in a word that names a GPU
// and its index together ("GPU0", "gpu1", "cuda0"), or 0.
func gluedIndex(w []byte) int {
	i := len(w)
	for i > 0 && isDigit(w[i-1]) {
		i--
	}
	if i == len(w) || i == 0 || len(w)-i > 3 {
		return 0
	}
	switch string(bytes.ToLower(w[:i])) {
	case "gpu", "cuda", "device", "dev", "gpu_", "gpu#":
		return i
	}
	return 0
}
