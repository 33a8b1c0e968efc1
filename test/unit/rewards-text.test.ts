import { describe, expect, it } from 'vitest';
import { extractFinalNumber, findNumbers, parseReferenceNumber } from '../../src/util/answer-numbers.js';
import { answerWords, extractFinalAnswer, findAnswerLine, normalizeAnswer } from '../../src/util/answer-text.js';

describe('normalizeAnswer', () => {
  it('trims, lower-cases, collapses whitespace and drops trailing periods', () => {
    expect(normalizeAnswer('  Hello   World.. ')).toBe('hello world');
    expect(normalizeAnswer('PARIS\n')).toBe('paris');
    expect(normalizeAnswer('3.5')).toBe('3.5');
    expect(normalizeAnswer('')).toBe('');
  });

  it('splits words without punctuation but keeps numbers whole', () => {
    expect(answerWords('The cat, the HAT!')).toEqual(['the', 'cat', 'the', 'hat']);
    expect(answerWords('Pi is 3.14; total 1,200.')).toEqual(['pi', 'is', '3.14', 'total', '1200']);
  });
});

describe('extractFinalAnswer', () => {
  it.each([
    ['Final answer: 42', '42'],
    ['ANSWER: 42', '42'],
    ['Let me think.\n6*7 = 42\n**Final Answer:** 42.', '42'],
    ['**Final Answer**: Paris', 'Paris'],
    ['The answer is Paris.', 'Paris'],
    ['The result is 7', '7'],
    ['Answer = -3', '-3'],
    ['work...\n\nFinal answer:\n\n  "olleh"', 'olleh'],
    ['So $\\boxed{\\frac{3}{4}}$ it is', '\\frac{3}{4}'],
    ['steps\n#### 1,000', '1,000'],
    ['The answer is correct, I checked.\nFinal answer: 7.\nHope this helps!', '7'],
    ['first line\nsecond line\n\n  `last line`  \n', 'last line'],
    ['just one line.', 'just one line'],
    ['Answer: 5\nActually, answer: 6', '6'],
    ['final answer is snake_case_word', 'snake_case_word'],
    ['The first letter of the word "egg" is "e".', 'e'],
    ['Final answer: the reversed word is “god”', 'god'],
    ['So 3 hours = "180 minutes"', '180 minutes'],
    ['The word "dog" is a classic example.', 'The word "dog" is a classic example'],
    ["It's \"cat\" and 'dog'", "It's \"cat\" and 'dog'"],
  ])('%j → %j', (text, expected) => {
    expect(extractFinalAnswer(text)).toBe(expected);
  });

  it('handles empty and missing replies, and says where the answer came from', () => {
    expect(extractFinalAnswer('')).toBe('');
    expect(extractFinalAnswer(null)).toBe('');
    expect(extractFinalAnswer('  \n \n')).toBe('');
    expect(findAnswerLine('Final answer: 1').source).toBe('final_answer');
    expect(findAnswerLine('x \\boxed{2}').source).toBe('boxed');
    expect(findAnswerLine('The answer is 3').source).toBe('answer');
    expect(findAnswerLine('3').source).toBe('last_line');
    expect(findAnswerLine('Final answer:').source).toBe('last_line');
    expect(findAnswerLine('The last letter of "rug" is "g".').source).toBe('quoted');
  });
});

describe('numbers', () => {
  it.each([
    ['1,234.5', 1234.5],
    ['-17', -17],
    ['\u22127', -7],
    ['3/4', 0.75],
    ['-3/4', -0.75],
    ['1 1/2', 1.5],
    ['.5', 0.5],
    ['2.5e3', 2500],
    ['42 km', 42],
    ['$1,200', 1200],
    ['50%', 50],
    ['x=-5', -5],
    ['1,000,000', 1e6],
  ])('reads %j as %d', (text, value) => {
    expect(findNumbers(text).map((n) => n.value)).toEqual([value]);
  });

  it('does not read numbers glued to words, and keeps subtraction apart from signs', () => {
    expect(findNumbers('CO2 v1.2 a1b2')).toEqual([]);
    expect(findNumbers('3-5').map((n) => n.value)).toEqual([3, 5]);
    expect(findNumbers('10 - 15 = -5').map((n) => n.value)).toEqual([10, 15, -5]);
    expect(findNumbers('1/0 and 4/0')).toEqual([]);
    expect(findNumbers('1e400, NaN, Infinity')).toEqual([]);
    expect(findNumbers('007 and 0.0').map((n) => n.value)).toEqual([7, 0]);
    expect(findNumbers('+3 or -0').map((n) => n.value)).toEqual([3, -0]);
  });

  it('takes the first number of an answer line, else the last number of the reply', () => {
    expect(extractFinalNumber('Final answer: 42 (since 40 + 2)')?.value).toBe(42);
    expect(extractFinalNumber('The answer is 12 apples, since 3 × 4 = 12.')?.value).toBe(12);
    expect(extractFinalNumber('3 + 4 = 7, times 6 is 42 km.')?.value).toBe(42);
    expect(extractFinalNumber('**Final Answer:** $\\boxed{-3/4}$')?.value).toBe(-0.75);
    expect(extractFinalNumber('Final answer: forty-two, i.e. 42')?.value).toBe(42);
    expect(extractFinalNumber('Final answer: none\nbut 3 and 4 were tried')?.value).toBe(4);
    expect(extractFinalNumber('no digits here')).toBeNull();
    expect(extractFinalNumber(null)).toBeNull();
  });

  it('parses a reference only when it is a single number', () => {
    expect(parseReferenceNumber('42')).toBe(42);
    expect(parseReferenceNumber('-1,000.5 m')).toBe(-1000.5);
    expect(parseReferenceNumber('3/4')).toBe(0.75);
    expect(parseReferenceNumber('Paris')).toBeNull();
    expect(parseReferenceNumber('1 and 2')).toBeNull();
  });
});
