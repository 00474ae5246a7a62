/* The shim's forwarders: each exported driver entry point jumps through the real pointer that
   shim.cc's constructor resolved (pl_real_<name>). A jump keeps every argument register and the
   stack as the caller left them, so no signature is needed. x86-64 only. */
#define PL_SYM(n) .globl n ; .type n, @function ; .p2align 4 ; n: jmp *pl_real_##n(%rip) ; .size n, .-n ;
	.text
#include "tools/faults/symbols.inc"
	.section .note.GNU-stack,"",@progbits
