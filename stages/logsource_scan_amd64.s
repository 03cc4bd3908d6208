#include "textflag.h"

// func indexInterestingAVX2(b []byte) (i int, hit bool)
//
// 32 positions per iteration, each looking at its byte c and the next two,
// n and nn (see interesting in logsource_scan.go). Stops before the last 33
// positions, which the caller scans: i is then the first position not
// examined.
TEXT ·indexInterestingAVX2(SB), NOSPLIT, $0-33
	MOVQ b_base+0(FP), SI
	MOVQ b_len+8(FP), DX
	XORQ AX, AX
	SUBQ $33, DX // positions i with i+33 < len(b): nn of the last one is in range
	JLE  done

	MOVL $0x72, BX // 'r'
	MOVQ BX, X8
	VPBROADCASTB X8, Y8
	MOVL $0x6c, BX // 'l'
	MOVQ BX, X9
	VPBROADCASTB X9, Y9
	MOVL $0x73, BX // 's'
	MOVQ BX, X6
	VPBROADCASTB X6, Y6
	MOVL $0x65, BX // 'e'
	MOVQ BX, X7
	VPBROADCASTB X7, Y7
	MOVL $0x5c, BX // '\\'
	MOVQ BX, X10
	VPBROADCASTB X10, Y10
	MOVL $0x75, BX // 'u'
	MOVQ BX, X11
	VPBROADCASTB X11, Y11
	MOVL $0x0a, BX // '\n'
	MOVQ BX, X12
	VPBROADCASTB X12, Y12
	MOVL $0x7b, BX // '{'
	MOVQ BX, X13
	VPBROADCASTB X13, Y13
	MOVL $0x7d, BX // '}'
	MOVQ BX, X14
	VPBROADCASTB X14, Y14

loop:
	VMOVDQU (SI)(AX*1), Y0  // c
	VMOVDQU 1(SI)(AX*1), Y1 // n
	VMOVDQU 2(SI)(AX*1), Y5 // nn
	VPCMPEQB Y0, Y8, Y2     // c == 'r'
	VPCMPEQB Y1, Y8, Y3     // n == 'r'
	VPAND    Y2, Y3, Y2     // "rr" (error)
	VPCMPEQB Y0, Y9, Y3     // c == 'l'
	VPCMPEQB Y1, Y6, Y4     // n == 's'
	VPAND    Y3, Y4, Y3
	VPCMPEQB Y5, Y7, Y4     // nn == 'e'
	VPAND    Y3, Y4, Y3     // "lse" (false)
	VPOR     Y3, Y2, Y2
	VPCMPEQB Y0, Y10, Y3    // c == '\\'
	VPCMPEQB Y1, Y11, Y4    // n == 'u'
	VPAND    Y3, Y4, Y3     // a \u escape
	VPOR     Y3, Y2, Y2
	VPCMPEQB Y0, Y12, Y3    // c == '\n'
	VPCMPEQB Y1, Y13, Y4    // n == '{'
	VPANDN   Y3, Y4, Y3     // a line not starting with '{'
	VPOR     Y3, Y2, Y2
	VPCMPEQB Y1, Y12, Y3    // n == '\n'
	VPCMPEQB Y0, Y14, Y4    // c == '}'
	VPANDN   Y3, Y4, Y3     // a line not ending with '}'
	VPOR     Y3, Y2, Y2
	VPOR     Y0, Y2, Y2     // c >= 0x80: not ASCII
	VPMOVMSKB Y2, BX
	TESTL    BX, BX
	JNZ      found
	ADDQ     $32, AX
	CMPQ     AX, DX
	JLT      loop

done:
	VZEROUPPER
	MOVQ AX, i+24(FP)
	MOVB $0, hit+32(FP)
	RET

found:
	VZEROUPPER
	BSFL BX, BX
	ADDQ BX, AX
	MOVQ AX, i+24(FP)
	MOVB $1, hit+32(FP)
	RET

// func indexPairAVX2(b []byte, c0, c1 byte) (i int, hit bool)
//
// The first position i with b[i] == c0 and b[i+1] == c1, 32 positions per
// iteration. Like indexInterestingAVX2 it stops before the last 32
// positions, which the caller scans: i is then the first not examined.
TEXT ·indexPairAVX2(SB), NOSPLIT, $0-41
	MOVQ b_base+0(FP), SI
	MOVQ b_len+8(FP), DX
	XORQ AX, AX
	SUBQ $32, DX
	JLE  pairdone

	MOVBQZX c0+24(FP), BX
	MOVQ    BX, X8
	VPBROADCASTB X8, Y8
	MOVBQZX c1+25(FP), BX
	MOVQ    BX, X9
	VPBROADCASTB X9, Y9

pairloop:
	VMOVDQU  (SI)(AX*1), Y0  // c
	VMOVDQU  1(SI)(AX*1), Y1 // n
	VPCMPEQB Y0, Y8, Y2
	VPCMPEQB Y1, Y9, Y3
	VPAND    Y2, Y3, Y2
	VPMOVMSKB Y2, BX
	TESTL    BX, BX
	JNZ      pairfound
	ADDQ     $32, AX
	CMPQ     AX, DX
	JLT      pairloop

pairdone:
	VZEROUPPER
	MOVQ AX, i+32(FP)
	MOVB $0, hit+40(FP)
	RET

pairfound:
	VZEROUPPER
	BSFL BX, BX
	ADDQ BX, AX
	MOVQ AX, i+32(FP)
	MOVB $1, hit+40(FP)
	RET
