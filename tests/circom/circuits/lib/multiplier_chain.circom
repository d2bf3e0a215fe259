pragma circom 2.1.0;

// A chain of `n` (>= 2) multiplications, each link one constraint whose two factors both
// depend on earlier links: x[i] = (x[i-1] + i) * (x[i-2] + b). Every wire then appears in
// A and in B, so the A, B1 and B2 MSMs span the whole witness as in real circuits. The size
// is chosen by the main component's argument (the benchmark makes 2^12, 2^14, 2^16 rows).
template MultiplierChain(n) {
    signal input a;
    signal input b;
    signal output out;
    signal x[n];

    x[0] <== a * b;
    x[1] <== (x[0] + 1) * (a + b);
    for (var i = 2; i < n; i++) {
        x[i] <== (x[i - 1] + i) * (x[i - 2] + b);
    }
    out <== x[n - 1];
}

// The plain chain x[i] = x[i-1] * b + i: B holds one signal, so the B MSMs are trivial (the
// benchmark's `--chain scalar`, the shape of the simplest multiplier circuits).
template ScalarMultiplierChain(n) {
    signal input a;
    signal input b;
    signal output out;
    signal x[n];

    x[0] <== a * b;
    for (var i = 1; i < n; i++) {
        x[i] <== x[i - 1] * b + i;
    }
    out <== x[n - 1];
}
