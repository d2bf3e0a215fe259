pragma circom 2.1.0;

// Several public inputs (an array and a scalar), two outputs, a private input and a check
// that fails in the witness calculator for an unsatisfiable input (secret = 0).
template NonZero() {
    signal input in;
    signal inv;
    inv <-- in != 0 ? 1 / in : 0;
    inv * in === 1;
}

template WeightedSum(n) {
    signal input x[n];
    signal input k;
    signal input secret;
    signal output total;
    signal output blinded;

    component check = NonZero();
    check.in <== secret;

    signal terms[n];
    var acc = 0;
    for (var i = 0; i < n; i++) {
        terms[i] <== x[i] * k;
        acc += terms[i];
    }
    total <== acc;
    blinded <== total * secret;
}

component main {public [x, k]} = WeightedSum(3);
