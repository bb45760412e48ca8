package record

import (
	"bytes"
	"fmt"
	"io"
	"testing"
)

func BenchmarkWriteRecord(b *testing.B) {
	for _, size := range []int{100, 4 << 10} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			w := NewWriter(newDiscardFile(b))
			rec := bytes.Repeat([]byte("v"), size)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := w.WriteRecord(rec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkReaderNext(b *testing.B) {
	for _, size := range []int{100, 4 << 10} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			recs := make([][]byte, (8<<20)/size)
			for i := range recs {
				recs[i] = bytes.Repeat([]byte{byte(i)}, size)
			}
			data := writeLog(b, recs).data
			var src bytes.Reader
			src.Reset(data)
			r := NewReader(&src, "bench.log")
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				_, err := r.Next()
				if err == io.EOF {
					src.Reset(data)
					r.reset(&src, "bench.log")
					_, err = r.Next()
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
