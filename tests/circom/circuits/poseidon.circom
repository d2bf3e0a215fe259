pragma circom 2.1.0;

include "circomlib/circuits/poseidon.circom";

// circomlib's Poseidon over a private two-element preimage and a public domain tag, compiled
// for BLS12-381 (its round constants are the BN254 ones: a test circuit, not the standard
// hash on this field). Public signals: [hash, domain].
template TaggedPoseidon() {
    signal input preimage[2];
    signal input domain;
    signal output hash;

    component h = Poseidon(3);
    h.inputs[0] <== preimage[0];
    h.inputs[1] <== preimage[1];
    h.inputs[2] <== domain;
    hash <== h.out;
}

component main {public [domain]} = TaggedPoseidon();
