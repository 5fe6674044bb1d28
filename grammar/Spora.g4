// The Spora language. One grammar, generated into the build dir as
// spora_antlr::SporaLexer / SporaParser / SporaVisitor / SporaBaseVisitor.
//
// Newlines. The lexer produces a NEWLINE token for every line break; lang/token_source.cpp
// (the only token source the parser is run with) then keeps a NEWLINE only where it can end
// a statement, in the way of Go's semicolon insertion plus Python's bracket rule:
//   - inside ( ) and [ ] every line break is dropped (an argument list or tensor literal
//     may span lines freely);
//   - elsewhere (top level, inside { } blocks and model bodies) a line break is kept only
//     right after a token that can end a statement: a name, a literal, `)`, `]`, `}`,
//     `return`, `pass`; so runs of line breaks collapse into one NEWLINE. A ';' is kept
//     under the same condition (`;;`, `{;` and a ';' next to a line break are dropped).
// So `a +\n b` and `let x =\n 3` continue on the next line, while `f(x)\n(a, b) = t`,
// `x\n-y` and `w = a\n@stage(1) param ...` stay two statements. This grammar therefore only
// sees NEWLINE where it separates statements or members, plus the few optional spots
// spelled `NEWLINE?` (after a decorator, before a `{`, before `else`).
//
// `model`, `param` and `as` are soft keywords: they start a declaration only where a
// declaration can start and are ordinary names elsewhere (`def loss(model, x)` is fine).
//
// Expressions follow Python's precedence, lowest first: lambda `fn (...) => e`,
// `a if c else b`, `or`, `and`, `not`, comparisons (not chained), `+ -`, `* / // % @`,
// unary `- +`, `**` (right-associative; `-2 ** 2` is `-(2 ** 2)`), then calls, attributes
// and subscripts. ANTLR's precedence climbing lists the tightest alternative first.
grammar Spora;

// ---------------------------------------------------------------- module

// Items are separated by exactly one `sep` token: token_source.cpp keeps a NEWLINE or ';'
// only right after a token that can end an item, so separators never come in runs and
// never start a list. That keeps every separator decision LL(1), and a new statement can
// never start on the line of the previous one (`f (a b)` is a broken call, not `f` and
// `(a b)`). The leading `sep?` never matches on valid input; it lets error recovery, which
// skips a bad line up to its separator, resume before the first item too.
file_ : sep? (topItem (sep topItem?)*)? EOF ;

topItem
  : importDecl
  | funcDef
  | modelDef
  | letStmt
  ;

sep : NEWLINE | ';' ;

importDecl : IMPORT dottedName (AS name)? ;

dottedName : name ('.' name)* ;

decorator : '@' dottedName ('(' argList? ')')? NEWLINE? ;

// def f(x: T, y = 1) -> R { block }    |    def f(x) = expr
funcDef
  : decorator* DEF name '(' paramList? ')' ('->' type)?
    ( NEWLINE? block | '=' expr )
  ;

paramList : param (',' param)* ','? ;

param : name (':' type)? ('=' expr)? ;

// model MLP(hidden: int = 512) { param w: f32[784, hidden] = normal(0.0, 0.02) ... }
modelDef
  : decorator* MODEL name ('(' paramList? ')')? NEWLINE?
    '{' sep? (member (sep member?)*)? '}'
  ;

member
  : fieldDecl
  | funcDef
  ;

fieldDecl
  : decorator* kind=(PARAM | LET) name (':' type)? ('=' expr)?
  ;

// ---------------------------------------------------------------- types

// f32[B, 784], f32, int, MLP, (f32, i32[3]); a dim is an expression or `?`.
type
  : name ('[' (dim (',' dim)* ','?)? ']')?          # namedType
  | '(' (type (',' type)* ','?)? ')'                # tupleType
  ;

dim
  : '?'                                             # unknownDim
  | expr                                            # exprDim
  ;

// ---------------------------------------------------------------- statements

block : '{' sep? (stmt (sep stmt?)*)? '}' ;

stmt
  : letStmt                                         # letStatement
  | ifStmt                                          # ifStatement
  | FOR pattern IN expr NEWLINE? block              # forStatement
  | WHILE expr NEWLINE? block                       # whileStatement
  | RETURN expr?                                    # returnStatement
  | ASSERT expr (',' expr)?                         # assertStatement
  | PASS                                            # passStatement
  | expr (assignOp expr)?                           # exprStatement
  ;

letStmt : kind=(LET | VAR) pattern (':' type)? '=' expr ;

// `else if` is an else block holding a single if statement.
ifStmt : IF expr NEWLINE? block (NEWLINE? ELSE (ifStmt | NEWLINE? block))? ;

assignOp : '=' | '+=' | '-=' | '*=' | '/=' ;

// x, _, (a, (b, _)), (x,)
pattern
  : name                                            # namePattern
  | '(' (pattern (',' pattern)* ','?)? ')'          # tuplePattern
  ;

// ---------------------------------------------------------------- expressions

expr
  : primary                                                   # primaryExpr
  | expr '(' argList? ')'                                     # callExpr
  | expr '.' name                                             # attributeExpr
  | expr '[' subscript (',' subscript)* ','? ']'              # indexExpr
  | <assoc=right> expr op='**' expr                           # powerExpr
  | op=('-' | '+') expr                                       # unaryExpr
  | expr op=('*' | '/' | '//' | '%' | '@') expr               # mulExpr
  | expr op=('+' | '-') expr                                  # addExpr
  | expr op=('==' | '!=' | '<' | '<=' | '>' | '>=') expr      # compareExpr
  | op=NOT expr                                               # notExpr
  | expr op=AND expr                                          # andExpr
  | expr op=OR expr                                           # orExpr
  | <assoc=right> expr IF expr ELSE expr                      # conditionalExpr
  | FN '(' paramList? ')' '=>' expr                           # lambdaExpr
  ;

primary
  : INT                                                       # intLiteral
  | FLOAT                                                     # floatLiteral
  | STRING                                                    # stringLiteral
  | (TRUE | FALSE)                                            # boolLiteral
  | NONE                                                      # noneLiteral
  | name                                                      # nameAtom
  | '(' (expr (',' expr)* ','?)? ')'                          # parenAtom
  | '[' (expr (',' expr)* ','?)? ']'                          # listAtom
  | FN '(' paramList? ')' NEWLINE? block                      # lambdaBlock
  ;

argList : arg (',' arg)* ','? ;

arg : (name '=')? expr ;

subscript
  : expr                                                      # indexSubscript
  | start=expr? ':' stop=expr? (':' step=expr?)?              # sliceSubscript
  ;

name : NAME | MODEL | PARAM | AS ;

// ---------------------------------------------------------------- lexer

DEF    : 'def' ;
MODEL  : 'model' ;
PARAM  : 'param' ;
LET    : 'let' ;
VAR    : 'var' ;
IF     : 'if' ;
ELSE   : 'else' ;
FOR    : 'for' ;
IN     : 'in' ;
WHILE  : 'while' ;
RETURN : 'return' ;
ASSERT : 'assert' ;
PASS   : 'pass' ;
IMPORT : 'import' ;
AS     : 'as' ;
FN     : 'fn' ;
TRUE   : 'true' ;
FALSE  : 'false' ;
NONE   : 'none' ;
AND    : 'and' ;
OR     : 'or' ;
NOT    : 'not' ;

// (Token order is the order in which expected tokens are listed in error messages.)
COMMA    : ',' ;
COLON    : ':' ;
SEMI     : ';' ;
LPAREN   : '(' ;
RPAREN   : ')' ;
LBRACK   : '[' ;
RBRACK   : ']' ;
LBRACE   : '{' ;
RBRACE   : '}' ;
DOT      : '.' ;
ARROW    : '->' ;
FAT_ARROW: '=>' ;
AT       : '@' ;
QUESTION : '?' ;
ASSIGN   : '=' ;
PLUS_ASSIGN  : '+=' ;
MINUS_ASSIGN : '-=' ;
STAR_ASSIGN  : '*=' ;
SLASH_ASSIGN : '/=' ;
EQ       : '==' ;
NE       : '!=' ;
LE       : '<=' ;
GE       : '>=' ;
LT       : '<' ;
GT       : '>' ;
POW      : '**' ;
STAR     : '*' ;
FLOOR_DIV: '//' ;
SLASH    : '/' ;
PERCENT  : '%' ;
PLUS     : '+' ;
MINUS    : '-' ;

FLOAT
  : DIGITS '.' DIGITS? EXPONENT?
  | '.' DIGITS EXPONENT?
  | DIGITS EXPONENT
  ;
INT : DIGITS ;

NAME : [a-zA-Z_] [a-zA-Z_0-9]* ;

STRING
  : '"' (~["\\\r\n] | '\\' ~[\r\n])* '"'
  | '\'' (~['\\\r\n] | '\\' ~[\r\n])* '\''
  ;
// A string missing its closing quote on its line; token_source.cpp reports it.
UNTERMINATED_STRING
  : '"' (~["\\\r\n] | '\\' ~[\r\n])* '\\'?
  | '\'' (~['\\\r\n] | '\\' ~[\r\n])* '\\'?
  ;

NEWLINE : '\r'? '\n' ;
WS      : [ \t\r\f]+ -> skip ;
COMMENT : '#' ~[\r\n]* -> skip ;

// Anything else (a stray `$`, a control byte, a non-ASCII byte outside a string or comment);
// token_source.cpp reports it and drops it, so the lexer itself never fails.
ERROR_CHAR : . ;

fragment DIGITS   : [0-9]+ ;
fragment EXPONENT : [eE] [+-]? [0-9]+ ;
