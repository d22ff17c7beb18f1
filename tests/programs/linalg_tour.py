"""A torch.linalg tour as a numerical-methods notebook walks through it: solve, lstsq (all
fields), eigh, eig/eigvals (complex results), svd(full_matrices=False), svdvals, pinv,
matrix_exp, cholesky/cholesky_ex, qr modes, det/slogdet, inv_ex, matrix/vector norms,
cond, matrix_rank, lu_factor/lu_solve, solve_triangular, multi_dot, householder_product,
batched inputs, gradcheck through them, and the results' strides (PyTorch returns
column-major results for many); then a small least-squares fit by gradient descent."""
import torch
from torch.autograd import gradcheck

torch.manual_seed(0)
torch.set_printoptions(precision=4, sci_mode=False)


def layout(name, t):
    print(name, tuple(t.shape), t.dtype, "stride", t.stride(), "contiguous", t.is_contiguous())


A = torch.tensor([[4.0, 1.0, 2.0], [1.0, 3.0, 0.7], [2.0, 0.7, 5.0]])
b = torch.tensor([[1.0], [2.0], [3.0]])
B = torch.randn(2, 3, 3)
S = B @ B.mT + 3 * torch.eye(3)

x = torch.linalg.solve(A, b)
print("solve", x.flatten())
layout("solve", x)
print("solve left=False", torch.linalg.solve(A, b.mT, left=False))
xb = torch.linalg.solve(S, torch.ones(2, 3))
layout("solve batched vector", xb)
print("solve residual", torch.dist(A @ x, b) < 1e-5)

X = torch.tensor([[1.0, 1.0], [1.0, 2.0], [1.0, 3.0], [1.0, 4.0]])
y = torch.tensor([[6.0], [5.0], [7.0], [10.0]])
for driver in ("gelsy", "gelsd", "gelss", "gels"):
    res = torch.linalg.lstsq(X, y, driver=driver)
    print("lstsq", driver, res.solution.flatten(), "residuals", res.residuals,
          "rank", res.rank, "sv", res.singular_values)
res = torch.linalg.lstsq(X, y)
print("lstsq default", type(res).__name__, len(res))
layout("lstsq solution", res.solution)

w, V = torch.linalg.eigh(A)
print("eigh values", w)
layout("eigh vectors", V)
print("eigh UPLO", torch.linalg.eigh(A, UPLO="U").eigenvalues)
print("eigvalsh", torch.linalg.eigvalsh(S))
print("eigh reconstructs", torch.allclose(V @ torch.diag(w) @ V.T, A, atol=1e-5))

R = torch.tensor([[0.0, -1.0], [1.0, 0.0]])
ev, evec = torch.linalg.eig(R)
print("eig values", ev, ev.dtype)
print("eig vectors", evec.dtype, evec.shape)
layout("eig vectors", evec)
print("eigvals", torch.linalg.eigvals(A).real.sort().values, torch.linalg.eigvals(A).dtype)

M = torch.tensor([[3.0, 2.0, 2.0], [2.0, 3.0, -2.0]])
U, s, Vh = torch.linalg.svd(M, full_matrices=False)
print("svd S", s)
layout("svd U", U)
layout("svd Vh", Vh)
U2, s2, Vh2 = torch.linalg.svd(M)
layout("svd full U", U2)
layout("svd full Vh", Vh2)
print("svd reconstructs", torch.allclose(U @ torch.diag(s) @ Vh, M, atol=1e-5))
print("svdvals", torch.linalg.svdvals(S))
print("torch.svd", [tuple(t.shape) for t in torch.svd(M)])
P = torch.linalg.pinv(M)
print("pinv", P)
layout("pinv", P)
print("pinv hermitian", torch.linalg.pinv(A, hermitian=True))

E = torch.linalg.matrix_exp(torch.tensor([[0.0, 1.0], [-1.0, 0.0]]))
print("matrix_exp", E)
layout("matrix_exp", E)

Lc = torch.linalg.cholesky(A)
print("cholesky", Lc)
layout("cholesky", Lc)
print("cholesky upper", torch.linalg.cholesky(A, upper=True))
L_ex, info = torch.linalg.cholesky_ex(torch.tensor([[1.0, 2.0], [2.0, 1.0]]))
print("cholesky_ex info", info, info.dtype)
try:
    torch.linalg.cholesky(torch.tensor([[1.0, 2.0], [2.0, 1.0]]))
except torch.linalg.LinAlgError as e:
    print("cholesky error", type(e).__name__, e)
print("cholesky_inverse", torch.cholesky_inverse(Lc))

Xqr = torch.tensor([[2.0, 1.0], [1.0, 3.0], [0.0, 1.0], [1.0, -1.0]])
for mode in ("reduced", "complete", "r"):
    Q, Rq = torch.linalg.qr(Xqr, mode=mode)
    print("qr", mode, tuple(Q.shape), tuple(Rq.shape), Rq)
    if Q.numel():
        layout("qr Q " + mode, Q)
    layout("qr R " + mode, Rq)

print("det", torch.linalg.det(A), torch.det(S))
sign, logabsdet = torch.linalg.slogdet(torch.tensor([[0.0, 1.0], [1.0, 0.0]]) * 3)
print("slogdet", sign, logabsdet)
print("logdet", torch.logdet(A))
inv, info = torch.linalg.inv_ex(A)
print("inv_ex", inv, info)
layout("inv", inv)
inv_s, info_s = torch.linalg.inv_ex(torch.zeros(2, 2))
print("inv_ex singular info", info_s)
try:
    torch.linalg.inv(torch.zeros(2, 2))
except torch.linalg.LinAlgError as e:
    print("inv error", e)

v = torch.tensor([3.0, -4.0, 0.0, 1.0])
for ord in (2, 1, float("inf"), -float("inf"), 0, 3.5):
    print("vector_norm", ord, torch.linalg.vector_norm(v, ord))
print("vector_norm dim", torch.linalg.vector_norm(S, dim=(-2, -1)), torch.linalg.vector_norm(S, dim=-1, keepdim=True).shape)
for ord in ("fro", "nuc", 1, -1, 2, -2, float("inf"), -float("inf")):
    print("matrix_norm", ord, torch.linalg.matrix_norm(A, ord))
print("norm default", torch.linalg.norm(A), torch.linalg.norm(v), torch.linalg.norm(A, 2))
print("torch.norm", torch.norm(A), torch.norm(A, p=1, dim=0), torch.norm(A, "fro"))
for p in (None, 1, 2, "fro", "nuc", float("inf")):
    print("cond", p, torch.linalg.cond(A, p))
print("matrix_rank", torch.linalg.matrix_rank(A), torch.linalg.matrix_rank(torch.ones(3, 3)),
      torch.linalg.matrix_rank(X, hermitian=False), torch.linalg.matrix_rank(S).dtype)
print("matrix_rank tol", torch.linalg.matrix_rank(A, atol=2.0, rtol=0.0))

LU, piv = torch.linalg.lu_factor(A)
print("lu_factor", LU, piv, piv.dtype)
layout("lu_factor LU", LU)
print("lu_solve", torch.linalg.lu_solve(LU, piv, b).flatten())
Pm, Lm, Um = torch.linalg.lu(A)
print("lu P", Pm)
print("lu L", Lm)
layout("lu U", Um)
print("lu_unpack", [tuple(t.shape) for t in torch.lu_unpack(LU, piv)])

T = torch.tensor([[2.0, 0.0, 0.0], [1.0, 3.0, 0.0], [0.5, -1.0, 4.0]])
st = torch.linalg.solve_triangular(T, b, upper=False)
print("solve_triangular", st.flatten())
layout("solve_triangular", st)
print("solve_triangular left=False", torch.linalg.solve_triangular(T.T, b.T, upper=True, left=False))
print("solve_triangular unitriangular", torch.linalg.solve_triangular(T, b, upper=False, unitriangular=True).flatten())
print("triangular_solve", torch.triangular_solve(b, T, upper=False).solution.flatten())

mats = [torch.randn(3, 4), torch.randn(4, 5), torch.randn(5, 2)]
md = torch.linalg.multi_dot(mats)
print("multi_dot", md.shape, torch.allclose(md, mats[0] @ mats[1] @ mats[2], atol=1e-5))
print("multi_dot vectors", torch.linalg.multi_dot([torch.ones(3), torch.eye(3), torch.ones(3)]))

Xq = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
h, tau = torch.geqrf(Xq)
print("geqrf", h, tau)
layout("geqrf", h)
Hp = torch.linalg.householder_product(h, tau)
print("householder_product", Hp)
layout("householder_product", Hp)
print("householder Q matches", torch.allclose(Hp.abs(), torch.linalg.qr(Xq).Q.abs(), atol=1e-5))
print("ormqr", torch.ormqr(h, tau, torch.eye(3)).shape)

print("batched det", torch.linalg.det(S))
print("batched inv", torch.linalg.inv(S).shape, torch.linalg.inv(S).stride())
print("batched cholesky", torch.linalg.cholesky(S).stride())
print("batched eigh", torch.linalg.eigh(S).eigenvectors.stride())
print("batched svd", [t.stride() for t in torch.linalg.svd(S)])
print("batched qr", [t.stride() for t in torch.linalg.qr(S)])
print("batched solve", torch.linalg.solve(S, torch.ones(2, 3, 1)).stride())
print("batched lu_factor", torch.linalg.lu_factor(S).LU.stride())
print("batched matrix_power", torch.linalg.matrix_power(S, 3).shape, torch.linalg.matrix_power(A, -1).allclose(inv, atol=1e-5))
print("vecdot", torch.linalg.vecdot(torch.ones(2, 3), torch.arange(3.0)))
print("cross", torch.linalg.cross(torch.tensor([1.0, 0.0, 0.0]), torch.tensor([0.0, 1.0, 0.0])))
print("diagonal", torch.linalg.diagonal(S).shape, "vander", torch.linalg.vander(torch.tensor([1.0, 2.0, 3.0])))
print("tensorsolve", torch.linalg.tensorsolve(torch.eye(6).reshape(2, 3, 6), torch.ones(2, 3)).shape)
print("tensorinv", torch.linalg.tensorinv(torch.eye(4).reshape(4, 2, 2), ind=1).shape)

Ad = A.double().requires_grad_()
print("gradcheck det", gradcheck(torch.linalg.det, (Ad,)))
print("gradcheck inv", gradcheck(torch.linalg.inv, (Ad,)))
print("gradcheck solve", gradcheck(torch.linalg.solve, (Ad, b.double().requires_grad_())))
print("gradcheck eigh", gradcheck(lambda a: torch.linalg.eigvalsh(a + a.mT), (Ad,)))
print("gradcheck svdvals", gradcheck(torch.linalg.svdvals, (Ad,)))
print("gradcheck cholesky", gradcheck(lambda a: torch.linalg.cholesky(a @ a.mT), (Ad,)))
print("gradcheck qr", gradcheck(lambda a: torch.linalg.qr(a).R, (Ad,)))
print("gradcheck matrix_exp", gradcheck(torch.linalg.matrix_exp, (Ad * 0.1,)))
print("gradcheck pinv", gradcheck(torch.linalg.pinv, (Ad,)))
print("gradcheck slogdet", gradcheck(lambda a: torch.linalg.slogdet(a).logabsdet, (Ad,)))
print("gradcheck norms", gradcheck(lambda a: torch.linalg.matrix_norm(a, "nuc"), (Ad,)))
Sg = S.double().requires_grad_()
torch.logdet(Sg).sum().backward()
print("logdet grad is inverse", torch.allclose(Sg.grad, torch.linalg.inv(S.double()).mT))

# least squares by gradient descent against the closed form
torch.manual_seed(0)
Xd = torch.randn(64, 3)
w_true = torch.tensor([[1.5], [-2.0], [0.5]])
yd = Xd @ w_true + 0.1 * torch.randn(64, 1)
closed = torch.linalg.lstsq(Xd, yd).solution
w = torch.zeros(3, 1, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
for step in range(40):
    loss = torch.linalg.vector_norm(Xd @ w - yd) ** 2 / len(Xd)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 8 == 0:
        print(f"lsq step {step:3d} loss {loss.item():.5f}")
print("gd matches lstsq", torch.allclose(w.detach(), closed, atol=1e-2))
