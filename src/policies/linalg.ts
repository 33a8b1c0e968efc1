import { CholeskyDecomposition, Matrix } from 'ml-matrix';
import { dot } from './sampling.js';
import type { LinearArmState } from './types.js';

/** An arm's ridge posterior, from one Cholesky factorization A = L Lᵀ. */
export interface Posterior {
  /** θ = A⁻¹ b. */
  theta: number[];
  /** sqrt(xᵀ A⁻¹ x): the LinUCB confidence width at x. */
  width(x: readonly number[]): number;
}

export function posterior(s: LinearArmState, label: string): Posterior {
  const chol = new CholeskyDecomposition(new Matrix(s.A));
  if (!chol.isPositiveDefinite())
    throw new Error(`${label}: its A matrix is not positive definite (a corrupted policy state)`);
  return {
    theta: chol.solve(Matrix.columnVector(s.b)).to1DArray(),
    width: (x) => Math.sqrt(Math.max(0, dot(x, chol.solve(Matrix.columnVector([...x])).to1DArray()))),
  };
}

/** λI, d×d. */
export const ridgePrior = (d: number, lambda: number): number[][] =>
  Array.from({ length: d }, (_, i) => Array.from({ length: d }, (_, j) => (i === j ? lambda : 0)));
