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


def std_sort_order(keys: list, descending: bool, plain: bool = False) -> list[int]:
    """The permutation `std::sort` leaves `range(len(keys))` in when sorting the pairs
    (keys[i], i) by key with ATen's KeyValueCompAsc / KeyValueCompDesc (with `plain`,
    by `a < b` alone, as ATen's `mode` sorts: a NaN may then lead a partition past the
    row's end, an IndexError here)."""
    n = len(keys)
    if plain:
        def comp(a, b):
            return a < b
    elif descending:
        def comp(a, b):
            return (a != a and b == b) or a > b
    else:
        def comp(a, b):
            return (a == a and b != b) or a < b
    k = list(keys)
    ix = list(range(n))

    def swap(i, j):
        k[i], k[j] = k[j], k[i]
        ix[i], ix[j] = ix[j], ix[i]

    def move_median_to_first(result, a, b, c):
        if comp(k[a], k[b]):
            if comp(k[b], k[c]):
                swap(result, b)
            elif comp(k[a], k[c]):
                swap(result, c)
            else:
                swap(result, a)
        elif comp(k[a], k[c]):
            swap(result, a)
        elif comp(k[b], k[c]):
            swap(result, c)
        else:
            swap(result, b)

    def unguarded_partition(first, last, pivot):
        while True:
            while comp(k[first], k[pivot]):
                first += 1
            last -= 1
            while comp(k[pivot], k[last]):
                last -= 1
            if not first < last:
                return first
            swap(first, last)
            first += 1

    def adjust_heap(first, hole, length, value):  # std::__adjust_heap + __push_heap
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

    def heap_sort(first, last):  # std::__partial_sort(first, last, last)
        length = last - first
        if length >= 2:
            parent = (length - 2) // 2
            while True:
                adjust_heap(first, parent, length, (k[first + parent], ix[first + parent]))
                if parent == 0:
                    break
                parent -= 1
        while last - first > 1:
            last -= 1
            value = (k[last], ix[last])
            k[last], ix[last] = k[first], ix[first]
            adjust_heap(first, 0, last - first, value)

    def introsort_loop(first, last, depth):
        while last - first > THRESHOLD:
            if depth == 0:
                heap_sort(first, last)
                return
            depth -= 1
            mid = first + (last - first) // 2
            move_median_to_first(first, first + 1, mid, last - 1)
            cut = unguarded_partition(first + 1, last, first)
            introsort_loop(cut, last, depth)
            last = cut

    def linear_insert(i):  # std::__unguarded_linear_insert
        vk, vi = k[i], ix[i]
        j = i - 1
        while comp(vk, k[j]):
            k[j + 1], ix[j + 1] = k[j], ix[j]
            j -= 1
        k[j + 1], ix[j + 1] = vk, vi

    def insertion_sort(first, last):  # std::__insertion_sort
        for i in range(first + 1, last):
            if comp(k[i], k[first]):
                vk, vi = k[i], ix[i]
                k[first + 1:i + 1], ix[first + 1:i + 1] = k[first:i], ix[first:i]
                k[first], ix[first] = vk, vi
            else:
                linear_insert(i)

    if n > 1:
        introsort_loop(0, n, 2 * (n.bit_length() - 1))
        if n > THRESHOLD:
            insertion_sort(0, THRESHOLD)
            for i in range(THRESHOLD, n):
                linear_insert(i)
        else:
            insertion_sort(0, n)
    return ix


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
