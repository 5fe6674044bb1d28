// Placeholder: replaced by the full grammar.
grammar Spora;
file_ : EOF ;
WS : [ \t\r\n]+ -> skip ;
