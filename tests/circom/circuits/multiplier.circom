pragma circom 2.1.0;

include "lib/multiplier_chain.circom";

// b is public, a stays private: public signals are [out, b].
component main {public [b]} = MultiplierChain(64);
