pragma circom 2.1.0;

// A chain of `n` multiplications: x[0] = a * b, x[i] = x[i-1] * b + i.
// One constraint per link, so the circuit's size is chosen by the main component's argument
// (the benchmark instantiates it at 2^12, 2^14 and 2^16 constraints).
template MultiplierChain(n) {
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
