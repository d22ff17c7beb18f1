"""PyTorch's CPU order of equal keys in an unstable sort (`torch.sort` / `argsort` with
`stable=False`, the default; `pack_padded_sequence(enforce_sorted=False)` sorts lengths
this way): libstdc++'s `std::sort` (introsort: median-of-three quicksort down to runs of
16, heapsort past 2 log2(n) levels, then insertion sort) over (key, index) pairs, with
ATen's comparators (NaN above every number). Which equal keys come first decides which
example lands in which row of a batch, and with it the dropout masks each one gets.

Pure Python on the host: `sorting.py` uses it only for CPU rows that have ties and are
small (elsewhere the stable order is kept).
"""

from __future__ import annotations

THRESHOLD = 16  # libstdc++'s _S_threshold

# the most elements whose equal keys are put in PyTorch's CPU order by emulating its
# unstable sort and selection on the host (pure Python); larger ones keep the stable order
TIE_ORDER_LIMIT = 1 << 15


def _comparator(descending: bool, plain: bool = False):
    """ATen's CPU comparators of (key, index) pairs: KeyValueCompDesc puts NaN above
    every number, KeyValueCompAsc below (topk's largest/smallest lambdas are the same);
    `plain` is `a < b` alone."""
    if plain:
        return lambda a, b: a < b
    if descending:
        return lambda a, b: (a != a and b == b) or a > b
    return lambda a, b: (a == a and b != b) or a < b


class _Pairs:
    """The pairs (keys[i], i) and libstdc++'s algorithms over them (bits/stl_algo.h,
    stl_heap.h), with `comp` on the keys; `ix` ends as the indices' order."""

    def __init__(self, keys: list, comp) -> None:
        self.k, self.ix, self.comp = list(keys), list(range(len(keys))), comp

    def swap(self, i: int, j: int) -> None:
        k, ix = self.k, self.ix
        k[i], k[j] = k[j], k[i]
        ix[i], ix[j] = ix[j], ix[i]

    def move_median_to_first(self, result: int, a: int, b: int, c: int) -> None:
        k, comp = self.k, self.comp
        if comp(k[a], k[b]):
            if comp(k[b], k[c]):
                self.swap(result, b)
            elif comp(k[a], k[c]):
                self.swap(result, c)
            else:
                self.swap(result, a)
        elif comp(k[a], k[c]):
            self.swap(result, a)
        elif comp(k[b], k[c]):
            self.swap(result, c)
        else:
            self.swap(result, b)

    def unguarded_partition(self, first: int, last: int, pivot: int) -> int:
        k, comp = self.k, self.comp
        while True:
            while comp(k[first], k[pivot]):
                first += 1
            last -= 1
            while comp(k[pivot], k[last]):
                last -= 1
            if not first < last:
                return first
            self.swap(first, last)
            first += 1

    def partition_pivot(self, first: int, last: int) -> int:  # __unguarded_partition_pivot
        self.move_median_to_first(first, first + 1, first + (last - first) // 2, last - 1)
        return self.unguarded_partition(first + 1, last, first)

    def adjust_heap(self, first: int, hole: int, length: int, value: tuple) -> None:
        """std::__adjust_heap (with __push_heap)."""
        k, ix, comp = self.k, self.ix, self.comp
        vk, vi = value
        top = hole
        second = hole
        while second < (length - 1) // 2:
            second = 2 * (second + 1)
            if comp(k[first + second], k[first + second - 1]):
                second -= 1
            k[first + hole], ix[first + hole] = k[first + second], ix[first + second]
            hole = second
        if (length & 1) == 0 and second == (length - 2) // 2:
            second = 2 * (second + 1)
            k[first + hole], ix[first + hole] = k[first + second - 1], ix[first + second - 1]
            hole = second - 1
        parent = (hole - 1) // 2
        while hole > top and comp(k[first + parent], vk):
            k[first + hole], ix[first + hole] = k[first + parent], ix[first + parent]
            hole = parent
            parent = (hole - 1) // 2
        k[first + hole], ix[first + hole] = vk, vi

    def make_heap(self, first: int, last: int) -> None:
        length = last - first
        if length < 2:
            return
        parent = (length - 2) // 2
        while True:
            self.adjust_heap(first, parent, length,
                             (self.k[first + parent], self.ix[first + parent]))
            if parent == 0:
                return
            parent -= 1

    def pop_heap(self, first: int, last: int, result: int) -> None:
        k, ix = self.k, self.ix
        value = (k[result], ix[result])
        k[result], ix[result] = k[first], ix[first]
        self.adjust_heap(first, 0, last - first, value)

    def sort_heap(self, first: int, last: int) -> None:
        while last - first > 1:
            last -= 1
            self.pop_heap(first, last, last)

    def heap_select(self, first: int, middle: int, last: int) -> None:
        self.make_heap(first, middle)
        for i in range(middle, last):
            if self.comp(self.k[i], self.k[first]):
                self.pop_heap(first, middle, i)

    def partial_sort(self, first: int, middle: int, last: int) -> None:
        self.heap_select(first, middle, last)
        self.sort_heap(first, middle)

    def introsort_loop(self, first: int, last: int, depth: int) -> None:
        while last - first > THRESHOLD:
            if depth == 0:
                self.partial_sort(first, last, last)
                return
            depth -= 1
            cut = self.partition_pivot(first, last)
            self.introsort_loop(cut, last, depth)
            last = cut

    def linear_insert(self, i: int) -> None:  # std::__unguarded_linear_insert
        k, ix, comp = self.k, self.ix, self.comp
        vk, vi = k[i], ix[i]
        j = i - 1
        while comp(vk, k[j]):
            k[j + 1], ix[j + 1] = k[j], ix[j]
            j -= 1
        k[j + 1], ix[j + 1] = vk, vi

    def insertion_sort(self, first: int, last: int) -> None:  # std::__insertion_sort
        k, ix = self.k, self.ix
        for i in range(first + 1, last):
            if self.comp(k[i], k[first]):
                vk, vi = k[i], ix[i]
                k[first + 1:i + 1], ix[first + 1:i + 1] = k[first:i], ix[first:i]
                k[first], ix[first] = vk, vi
            else:
                self.linear_insert(i)

    def sort(self, first: int, last: int) -> None:  # std::sort
        n = last - first
        if n < 2:
            return
        self.introsort_loop(first, last, 2 * (n.bit_length() - 1))
        if n > THRESHOLD:
            self.insertion_sort(first, first + THRESHOLD)
            for i in range(first + THRESHOLD, last):
                self.linear_insert(i)
        else:
            self.insertion_sort(first, last)

    def nth_element(self, first: int, nth: int, last: int) -> None:  # std::__introselect
        if first == last or nth == last:
            return
        depth = 2 * ((last - first).bit_length() - 1)
        while last - first > 3:
            if depth == 0:
                self.heap_select(first, nth + 1, last)
                self.swap(first, nth)  # the nth key in its place
                return
            depth -= 1
            cut = self.partition_pivot(first, last)
            if cut <= nth:
                first = cut
            else:
                last = cut
        self.insertion_sort(first, last)


def std_sort_order(keys: list, descending: bool, plain: bool = False) -> list[int]:
    """The permutation `std::sort` leaves `range(len(keys))` in when sorting the pairs
    (keys[i], i) by key with ATen's KeyValueCompAsc / KeyValueCompDesc (with `plain`,
    by `a < b` alone, as ATen's `mode` sorts: a NaN may then lead a partition past the
    row's end, an IndexError here)."""
    pairs = _Pairs(keys, _comparator(descending, plain))
    pairs.sort(0, len(keys))
    return pairs.ix


def std_topk_order(keys: list, k: int, largest: bool, sorted: bool) -> list[int]:  # noqa: A002
    """The indices ATen's CPU `topk` returns for one row (`topk_impl_loop`): the pairs
    (key, index) partially sorted by `std::partial_sort` when k * 64 <= the row's
    length, else split by `std::nth_element` at k - 1 and, with `sorted`, the first
    k - 1 put in order by `std::sort`; NaN counts as the largest key."""
    pairs = _Pairs(keys, _comparator(largest))
    n = len(keys)
    if k == 0:
        return []
    if k * 64 <= n:
        pairs.partial_sort(0, k, n)
    else:
        pairs.nth_element(0, k - 1, n)
        if sorted:
            pairs.sort(0, k - 1)
    return pairs.ix[:k]


def quick_select_index(keys: list, k: int) -> int:
    """The index ATen's `quick_select_template` (kthvalue's CPU kernel) leaves at position
    `k` of the pairs (keys[i], i): median-of-three quickselect with NaN above every
    number, which decides which of equal keys is returned."""
    arr, ix = list(keys), list(range(len(keys)))

    def gt(a, b):
        return (a != a and b == b) or a > b

    def swap(a, b):
        arr[a], arr[b] = arr[b], arr[a]
        ix[a], ix[b] = ix[b], ix[a]

    lo, hi = 0, len(arr) - 1
    while hi > lo:
        if hi == lo + 1:
            if gt(arr[lo], arr[hi]):
                swap(lo, hi)
            break
        swap(lo + (hi - lo) // 2, lo + 1)
        if gt(arr[lo + 1], arr[hi]):
            swap(lo + 1, hi)
        if gt(arr[lo], arr[hi]):
            swap(lo, hi)
        if gt(arr[lo + 1], arr[lo]):
            swap(lo + 1, lo)
        i, j, pivot = lo + 1, hi, arr[lo]
        while True:
            i += 1
            while gt(pivot, arr[i]):
                i += 1
            j -= 1
            while gt(arr[j], pivot):
                j -= 1
            if j < i:
                break
            swap(i, j)
        swap(lo, j)
        if j <= k:
            lo = i
        if j >= k:
            hi = j - 1
    return ix[k]


def mode_of_row(keys: list) -> tuple[object, int]:
    """ATen's CPU `mode` of one row: the pairs (key, index) sorted by `std::sort` with
    `a < b`, then the first longest run of equal keys (NaN equals nothing), and the index
    of its last pair."""
    order = std_sort_order(keys, False, plain=True)
    best, best_index, best_count, count = keys[order[0]], order[0], 0, 0
    for pos, i in enumerate(order):
        count += 1
        if pos == len(order) - 1 or keys[i] != keys[order[pos + 1]]:
            if count > best_count:
                best, best_index, best_count = keys[i], i, count
            count = 0
    return best, best_index
