#include "textflag.h"

// func safeBlocks(p *byte, n int, html bool) int
//
// Returns the length of the longest prefix of p[:n], in whole 16-byte
// blocks, that needs no escaping in a JSON string (see safeWords). SSE2,
// which every amd64 processor has. A signed compare against 0x20 flags
// both control characters and bytes at or above 0x80 (negative as int8).
TEXT ·safeBlocks(SB), NOSPLIT, $0-32
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	MOVBLZX html+16(FP), R8
	XORQ AX, AX

	MOVQ $0x2020202020202020, DX
	MOVQ DX, X7
	PUNPCKLQDQ X7, X7
	MOVQ $0x5c5c5c5c5c5c5c5c, DX
	MOVQ DX, X5
	PUNPCKLQDQ X5, X5
	TESTQ R8, R8
	JNZ html

	MOVQ $0x2222222222222222, DX
	MOVQ DX, X6
	PUNPCKLQDQ X6, X6

plain:
	LEAQ 16(AX), DX
	CMPQ DX, CX
	JHI done
	MOVOU (SI)(AX*1), X0
	MOVO X7, X8
	PCMPGTB X0, X8
	MOVO X0, X9
	PCMPEQB X6, X9
	POR X9, X8
	PCMPEQB X5, X0
	POR X0, X8
	PMOVMSKB X8, DX
	TESTL DX, DX
	JNZ done
	ADDQ $16, AX
	JMP plain

html:
	// (b|4) == '&' holds for '"' and '&'; (b|2) == '>' for '<' and '>'.
	MOVQ $0x0404040404040404, DX
	MOVQ DX, X1
	PUNPCKLQDQ X1, X1
	MOVQ $0x2626262626262626, DX
	MOVQ DX, X2
	PUNPCKLQDQ X2, X2
	MOVQ $0x0202020202020202, DX
	MOVQ DX, X3
	PUNPCKLQDQ X3, X3
	MOVQ $0x3e3e3e3e3e3e3e3e, DX
	MOVQ DX, X4
	PUNPCKLQDQ X4, X4

	// Two blocks a round while they are safe; the block loop below finds
	// which one stopped it.
html32:
	LEAQ 32(AX), DX
	CMPQ DX, CX
	JHI htmlloop
	MOVOU (SI)(AX*1), X0
	MOVOU 16(SI)(AX*1), X11
	MOVO X7, X8
	PCMPGTB X0, X8
	MOVO X7, X12
	PCMPGTB X11, X12
	POR X12, X8
	MOVO X0, X9
	POR X1, X9
	PCMPEQB X2, X9
	POR X9, X8
	MOVO X11, X12
	POR X1, X12
	PCMPEQB X2, X12
	POR X12, X8
	MOVO X0, X10
	POR X3, X10
	PCMPEQB X4, X10
	POR X10, X8
	MOVO X11, X12
	POR X3, X12
	PCMPEQB X4, X12
	POR X12, X8
	PCMPEQB X5, X0
	POR X0, X8
	PCMPEQB X5, X11
	POR X11, X8
	PMOVMSKB X8, DX
	TESTL DX, DX
	JNZ htmlloop
	ADDQ $32, AX
	JMP html32

htmlloop:
	LEAQ 16(AX), DX
	CMPQ DX, CX
	JHI done
	MOVOU (SI)(AX*1), X0
	MOVO X7, X8
	PCMPGTB X0, X8
	MOVO X0, X9
	POR X1, X9
	PCMPEQB X2, X9
	POR X9, X8
	MOVO X0, X10
	POR X3, X10
	PCMPEQB X4, X10
	POR X10, X8
	PCMPEQB X5, X0
	POR X0, X8
	PMOVMSKB X8, DX
	TESTL DX, DX
	JNZ done
	ADDQ $16, AX
	JMP htmlloop

done:
	MOVQ AX, ret+24(FP)
	RET
